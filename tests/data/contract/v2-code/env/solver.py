def square(x):
    return x * abs(x)  # right for x >= 0 only
