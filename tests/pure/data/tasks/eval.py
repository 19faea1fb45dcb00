# fixture: eval.py
