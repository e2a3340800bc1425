// A library the symbolizer tests load with dlopen while another thread reads the module list.
__attribute__((noinline)) int cutraceDlopenTarget(int x) { return x * 3 + 1; }
