// fixture: utils.h
