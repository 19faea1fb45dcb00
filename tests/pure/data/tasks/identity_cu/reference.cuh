// fixture: reference.cuh
