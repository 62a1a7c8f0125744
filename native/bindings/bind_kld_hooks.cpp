// The KLD pass's test hooks (native/src/kld_hooks.hpp): private names, for the tests only.
#include "../src/kld_hooks.hpp"
#include "pycommon.hpp"

namespace dumpcmp::bindings {

void bind_kld_hooks(py::module_& m) {
    m.def("_kld_group_counts", [] {
        const detail::KldGroupCounts c = detail::kld_group_counts();
        return py::make_tuple(c.close, c.general);
    }, "(close, general): groups of 16 elements whose log(p/q) took each form since the last reset.");
    m.def("_reset_kld_group_counts", &detail::reset_kld_group_counts);
    m.def("_kld_general_only", &detail::kld_general_only, "Whether DUMPCMP_KLD=general forces the general form.");
}

}  // namespace dumpcmp::bindings
