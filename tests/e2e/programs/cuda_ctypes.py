# Python calling the CUDA runtime through ctypes (the GIL is released during each call) from
# known call chains: nested functions, a method, a lambda called by a C builtin, a generator,
# and a second thread. The stacks of these calls must show these Python frames, in order.
# first_site and second_site, called one after the other from one line, make their calls with
# the same native frames: only their Python frames tell the stacks apart. caller_a and
# caller_b, too, both calling shared_leaf: only the frame below the innermost differs. nested
# calls at depths that go up and down: each stack shares its outer frames with the last one
# and not its inner ones (a walk reuses what the thread's last one read of the shared part).
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


def first_site():
    rt.cudaDeviceSynchronize()


def second_site():
    rt.cudaDeviceSynchronize()


def shared_leaf():
    rt.cudaDeviceSynchronize()


def caller_a():
    shared_leaf()


def caller_b():
    shared_leaf()


def nested(depth):
    if depth == 0:
        rt.cudaDeviceSynchronize()
    else:
        nested(depth - 1)


def batches():
    yield rt.cudaDeviceSynchronize()


def train():
    Model().forward(2)
    sorted([3], key=lambda v: rt.cudaDeviceSynchronize())
    for _ in batches():
        pass
    for site in (first_site, second_site, first_site):
        site()
    for caller in (caller_a, caller_b, caller_a):
        caller()
    for depth in (1, 3, 2, 3, 0):
        nested(depth)


train()
worker = threading.Thread(target=train, name="worker")
worker.start()
worker.join()
print("done", file=sys.stdout)
