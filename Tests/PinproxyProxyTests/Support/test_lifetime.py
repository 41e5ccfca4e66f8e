"""Ties a test helper process to the test process that started it."""
import os
import threading
import time


def end_with_the_test():
    """Exits when the test process that started this one is gone (its pipe to our
    stdin may stay open in another child, and SIGTERM may arrive blocked)."""
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)
    threading.Thread(target=watch, daemon=True).start()
