# Returns a result of the wrong shape and then of the wrong dtype.
def custom_kernel(data):
    a = data[0]
    return a[:-1] if a.numel() > 1 else a.float()
