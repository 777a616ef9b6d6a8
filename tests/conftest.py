# pytest puts this directory on sys.path, so tests import shared helpers (opcheck, models) directly.
