// fixture: eval.cu
