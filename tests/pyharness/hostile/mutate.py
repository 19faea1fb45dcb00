# Input mutation: writes the result into its input a (no allocation: a
# little faster). Defence: every input byte is compared with the pristine
# copy after every call.
def custom_kernel(data):
    a, b = data
    a.add_(b)
    return a
