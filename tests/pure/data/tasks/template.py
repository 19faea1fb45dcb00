# fixture: template.py
