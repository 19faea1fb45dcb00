# fixture: task.py
