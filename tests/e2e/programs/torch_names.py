# PyTorch's emit_nvtx ranges without PyTorch: the range names a training step of a small model
# produces on 2.11 (forward ops with seq/op_id/sizes, backward functions on the autograd
# engine's thread, the older "stashed seq" spelling, an op run inside a backward function as
# with create_graph=True, and a number used on two threads), pushed through NVTX's C API with
# CUDA calls inside some ops, on the stand-in runtime.
import ctypes
import threading

nvtx = ctypes.CDLL("libnvtx3interop.so.1")
nvtx.nvtxRangePushA.argtypes = [ctypes.c_char_p]
nvtx.nvtxNameOsThreadA.argtypes = [ctypes.c_uint32, ctypes.c_char_p]
rt = ctypes.CDLL("libcudart.so.13")


class Range:
    def __init__(self, name, calls=0):
        self.name, self.calls = name, calls

    def __enter__(self):
        nvtx.nvtxRangePushA(self.name.encode())
        for _ in range(self.calls):
            rt.cudaDeviceSynchronize()

    def __exit__(self, *exc):
        nvtx.nvtxRangePop()


def forward():
    with Range("step"):
        with Range("aten::linear, seq = 100, op_id = 1, sizes = [[16, 256], [256, 256], [256]], input_op_ids = [0, 0, 0]"):
            with Range("aten::addmm, seq = 100, op_id = 2, sizes = [[256], [16, 256], [256, 256], [], []], "
                       "input_op_ids = [0, 0, 0]", calls=1):
                pass
        with Range("aten::relu, seq = 101, op_id = 3, sizes = [[16, 256]], input_op_ids = [2]", calls=1):
            pass
        with Range("aten::sum, seq = 102, op_id = 4, sizes = [[16, 256]], input_op_ids = [3]"):
            pass
        with Range("aten::mul, seq = 300, op_id = 20"):
            pass


def backward():
    nvtx.nvtxNameOsThreadA(threading.get_native_id(), b"pt_autograd_0")
    with Range("autograd::engine::evaluate_function: SumBackward0, op_id = 5"):
        with Range("SumBackward0, seq = 102, op_id = 6, sizes = [[]], input_op_ids = []"):
            pass
    with Range("autograd::engine::evaluate_function: ReluBackward0, op_id = 7"):
        with Range("ReluBackward0, seq = 101, op_id = 8, sizes = [[16, 256]], input_op_ids = [6]"):
            with Range("aten::threshold_backward, seq = 200, op_id = 9, sizes = [[16, 256], [16, 256], []], "
                       "input_op_ids = [6, 3, 0]", calls=1):
                pass
    with Range("AddmmBackward0, stashed seq = 100", calls=1):
        with Range("aten::mm, op_id = 10, sizes = [[16, 256], [256, 256]]"):
            pass
    with Range("ThresholdBackwardBackward0, seq = 200, op_id = 11"):
        pass
    with Range("MulBackward0, seq = 300, op_id = 21"):
        pass


def other():
    # The same number on another thread: which forward op made MulBackward0 is ambiguous.
    with Range("aten::mul, seq = 300, op_id = 30"):
        pass


forward()
for target in (other, backward):
    t = threading.Thread(target=target)
    t.start()
    t.join()
print("done")
