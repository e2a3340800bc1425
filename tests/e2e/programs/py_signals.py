# cutrace's SIGINT/SIGTERM handler must be invisible to the program: Python sees the default
# dispositions and installs its KeyboardInterrupt handler as usual; Ctrl-C still raises
# KeyboardInterrupt; a SIGTERM still ends the process with the default action, and the trace of
# what came before it is written.
import ctypes
import os
import signal

rt = ctypes.CDLL("libcudart.so.13")
print("SIGINT", signal.getsignal(signal.SIGINT) is signal.default_int_handler)
print("SIGTERM", signal.getsignal(signal.SIGTERM) == signal.SIG_DFL)
rt.cudaDeviceSynchronize()
try:
    os.kill(os.getpid(), signal.SIGINT)
    signal.pause()
except KeyboardInterrupt:
    print("KeyboardInterrupt")
rt.cudaDeviceSynchronize()
print("terminating", flush=True)
os.kill(os.getpid(), signal.SIGTERM)
signal.pause()
