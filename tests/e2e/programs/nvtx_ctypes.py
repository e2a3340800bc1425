"""NVTX from Python through ctypes on libnvtx3interop.so.1 (NVTX v3's exported C API), the way
profiling helpers in Python packages call it. Thread ids of the threads used go to argv[1]."""
import ctypes
import sys
import threading

lib = ctypes.CDLL("libnvtx3interop.so.1")
lib.nvtxRangePushA.argtypes = [ctypes.c_char_p]
lib.nvtxMarkA.argtypes = [ctypes.c_char_p]
lib.nvtxRangePushW.argtypes = [ctypes.c_wchar_p]

tids = []


def step(n):
    lib.nvtxRangePushA(b"step %d" % n)
    lib.nvtxRangePushA(b"forward")
    lib.nvtxRangePop()
    lib.nvtxRangePushW("backward \u2207")
    lib.nvtxRangePop()
    lib.nvtxRangePop()


def loader():
    threading.current_thread().name = "loader"
    tids.append(("py-loader", threading.get_native_id()))
    lib.nvtxNameOsThreadA(threading.get_native_id(), b"py-loader")
    lib.nvtxMarkA(b"batch ready")


tids.append(("py-main", threading.get_native_id()))
lib.nvtxNameOsThreadA(threading.get_native_id(), b"py-main")
for i in range(3):
    step(i)
t = threading.Thread(target=loader)
t.start()
t.join()
with open(sys.argv[1], "w") as f:
    for name, tid in tids:
        f.write(f"{name} {tid}\n")
print("nvtx_ctypes: ok")
