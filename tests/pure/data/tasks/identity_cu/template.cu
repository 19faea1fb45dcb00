// fixture: template.cu
