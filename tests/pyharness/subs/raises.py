# custom_kernel raises: the case fails with the exception's text (112).
def custom_kernel(data):
    raise ValueError("deliberately broken")
