# fixture: utils.py
