// libFuzzer driver for the graph JSON reader (see targets.hpp). Built with -DDUMPCMP_FUZZ=ON and clang.
#include "targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    dumpcmp::fuzz::graph_target(data, size);
    return 0;
}
