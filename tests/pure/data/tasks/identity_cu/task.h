// fixture: task.h
