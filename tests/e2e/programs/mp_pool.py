# A multiprocessing pool with forked workers (the DataLoader pattern): each worker makes three
# CUDA calls in its initializer and ends, like every multiprocessing child, in os._exit. Each
# process gets its own trace with exactly its own calls.
import ctypes
import multiprocessing as mp

rt = ctypes.CDLL("libcudart.so.13")


def init():
    for _ in range(3):
        rt.cudaDeviceSynchronize()


def square(x):
    return x * x


if __name__ == "__main__":
    rt.cudaDeviceSynchronize()
    pool = mp.get_context("fork").Pool(2, initializer=init)
    print(sorted(pool.map(square, range(8))))
    pool.close()
    pool.join()
