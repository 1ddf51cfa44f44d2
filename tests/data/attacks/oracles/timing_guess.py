def secret(x):
    import time
    start = time.perf_counter()
    while time.perf_counter() - start < 0.05:
        pass
    return int(start * 1e6) % 1000000
