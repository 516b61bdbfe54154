from cudalint.entry import run

if __name__ == "__main__":
    run()
