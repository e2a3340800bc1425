# Python calling the CUDA runtime through ctypes (the GIL is released during each call) from
# known call chains: nested functions, a method, a lambda called by a C builtin, a generator,
# and a second thread. The stacks of these calls must show these Python frames, in order.
import ctypes
import sys
import threading

rt = ctypes.CDLL("libcudart.so.13")


def synchronize(n):
    for _ in range(n):
        rt.cudaDeviceSynchronize()


class Model:
    def forward(self, x):
        synchronize(x)
        return x


def batches():
    yield rt.cudaDeviceSynchronize()


def train():
    Model().forward(2)
    sorted([3], key=lambda v: rt.cudaDeviceSynchronize())
    for _ in batches():
        pass


train()
worker = threading.Thread(target=train, name="worker")
worker.start()
worker.join()
print("done", file=sys.stdout)
