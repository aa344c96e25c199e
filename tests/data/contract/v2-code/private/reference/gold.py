with open("solver.py", "w") as fh:
    fh.write("def square(x):\n    return x * x\n")
