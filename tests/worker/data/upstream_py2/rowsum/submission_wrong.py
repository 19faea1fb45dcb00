from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    # Leaves out the last column.
    return data[:, :-1].sum(dim=1)
