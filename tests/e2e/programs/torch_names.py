# PyTorch's emit_nvtx ranges without PyTorch: the range names a training step of a small model
# produces on 2.11 (forward ops with seq/op_id/sizes, backward functions on the autograd
# engine's thread, the older "stashed seq" spelling, an op run inside a backward function as
# with create_graph=True, a number recorded by several ops beside and around the one that makes
# the node, and a number used on two threads), pushed through NVTX's C API with CUDA calls
# inside some ops, on the stand-in runtime.
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
        # An attention in-projection as 2.11 records it: views of an input that needs no grad and
        # composite ops take the number of the next node made, beside and around the op making it
        # (aten::t makes TBackward0 with 103, aten::mm makes MmBackward0 with 104).
        with Range("aten::transpose, seq = 103, op_id = 40, sizes = [[16, 128, 256], [], []], "
                   "input_op_ids = [(0,-1), (0,-1), (0,-1)]"):
            pass
        with Range("aten::linear, seq = 103, op_id = 41, sizes = [[128, 16, 256], [768, 256], [768]], "
                   "input_op_ids = [(40,0), (0,-1), (0,-1)]"):
            with Range("aten::t, seq = 103, op_id = 42, sizes = [[768, 256]], input_op_ids = [(0,-1)]"):
                pass
            with Range("aten::matmul, seq = 104, op_id = 43, sizes = [[128, 16, 256], [256, 768]], "
                       "input_op_ids = [(40,0), (42,0)]"):
                with Range("aten::reshape, seq = 104, op_id = 44, sizes = [[128, 16, 256], []], "
                           "input_op_ids = [(40,0), (0,-1)]"):
                    with Range("aten::clone, seq = 104, op_id = 45, sizes = [[128, 16, 256], []], "
                               "input_op_ids = [(40,0), (0,-1)]", calls=1):
                        pass
                    with Range("aten::_unsafe_view, seq = 104, op_id = 46, sizes = [[128, 16, 256], []], "
                               "input_op_ids = [(45,0), (0,-1)]"):
                        pass
                with Range("aten::mm, seq = 104, op_id = 47, sizes = [[2048, 256], [256, 768]], "
                           "input_op_ids = [(44,0), (42,0)]", calls=1):
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
    with Range("autograd::engine::evaluate_function: MmBackward0, op_id = 48"):
        with Range("MmBackward0, seq = 104, op_id = 49, sizes = [[2048, 768]], input_op_ids = [(46,0)]", calls=1):
            pass
    with Range("autograd::engine::evaluate_function: TBackward0, op_id = 50"):
        with Range("TBackward0, seq = 103, op_id = 51, sizes = [[256, 768]], input_op_ids = [(49,0)]"):
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
