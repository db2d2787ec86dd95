#!/usr/bin/env python3
import multiprocessing
import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "paritysite.settings")
    # PARITY_START_METHOD=spawn: --parallel workers as on macOS (they get
    # their databases in setup_worker_connection, from the environment).
    if os.environ.get("PARITY_START_METHOD"):
        multiprocessing.set_start_method(os.environ["PARITY_START_METHOD"])
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
