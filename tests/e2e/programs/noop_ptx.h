/* A module with one empty kernel, "noop", as cuModuleLoadData takes it (the stand-in driver and a
 * real one). */
#pragma once

static const char kPtx[] =
    ".version 8.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    ".visible .entry noop()\n"
    "{\n"
    "  ret;\n"
    "}\n";
