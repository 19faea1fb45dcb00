# fixture: reference.py
