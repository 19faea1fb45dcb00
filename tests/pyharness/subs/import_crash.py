# Dies while being imported (user code at import time): exit 115.
import os

os._exit(3)
