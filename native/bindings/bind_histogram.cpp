#include <memory>
#include <optional>

#include "dumpcmp/histogram.hpp"
#include "pycommon.hpp"

namespace dumpcmp::bindings {

namespace {

py::dict range_dict(const ValueRange& r) {
    py::dict d;
    const bool any = r.finite > 0;
    d["min"] = any ? py::object(py::float_(r.min)) : py::object(py::none());
    d["max"] = any ? py::object(py::float_(r.max)) : py::object(py::none());
    d["finite"] = r.finite;
    d["nan"] = r.nan;
    d["pos_inf"] = r.pos_inf;
    d["neg_inf"] = r.neg_inf;
    return d;
}

}  // namespace

void bind_histogram(py::module_& core) {
    py::module_ m = core.def_submodule("histogram", "Value ranges, histograms and the largest errors of tensors.");
    m.def("value_range", [](const std::shared_ptr<TensorSource>& s, unsigned threads) {
        ValueRange r;
        {
            py::gil_scoped_release release;  // the source keeps its mapping alive; no Python object is touched
            r = value_range(*s, threads);
        }
        return range_dict(r);
    }, py::arg("source"), py::arg("threads") = 0,
       "Pass one over a tensor: min and max of the finite values, counts of finite, NaN, +inf, -inf.");

    m.def("histogram", [](const std::shared_ptr<TensorSource>& s, std::size_t bins,
                          std::optional<std::pair<double, double>> range, unsigned threads) {
        Histogram h;
        {
            py::gil_scoped_release release;
            h = range ? histogram(*s, bins, range->first, range->second, threads) : histogram_auto(*s, bins, threads);
        }
        py::dict d = range_dict(h.range);
        py::array_t<std::uint64_t> counts(static_cast<py::ssize_t>(h.counts.size()));
        std::copy(h.counts.begin(), h.counts.end(), counts.mutable_data());
        d["counts"] = counts;
        d["lo"] = h.lo;
        d["hi"] = h.hi;
        d["below"] = h.below;
        d["above"] = h.above;
        return d;
    }, py::arg("source"), py::arg("bins"), py::arg("range") = py::none(), py::arg("threads") = 0,
       "Counts of the finite values in `bins` equal bins (numpy.histogram's) over `range` or the data's own range "
       "(then two passes), with the range and NaN/inf counts of the whole tensor.");

    m.def("top_errors", [](const std::shared_ptr<TensorSource>& x, const std::shared_ptr<TensorSource>& y,
                           std::size_t n, unsigned threads) {
        std::vector<ElementError> top;
        {
            py::gil_scoped_release release;
            top = top_errors(*x, *y, n, threads);
        }
        py::list out;
        for (const auto& e : top) out.append(py::make_tuple(e.index, e.x, e.y, e.abs_error));
        return out;
    }, py::arg("x"), py::arg("y"), py::arg("n"), py::arg("threads") = 0,
       "The n largest |x - y| (finite ones), largest first: (index, x, y, abs_error) tuples.");
}

}  // namespace dumpcmp::bindings
