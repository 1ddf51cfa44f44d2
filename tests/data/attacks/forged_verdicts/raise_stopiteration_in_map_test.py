def double(x):
    raise StopIteration
