// In a process with no interpreter the module must stay off and say why.
#include "expect_off.h"

int main() { return expectOff("not a Python process"); }
