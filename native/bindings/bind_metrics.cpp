#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>
#include <optional>
#include <string>

#include "dumpcmp/dtype.hpp"
#include "dumpcmp/metrics.hpp"
#include "pycommon.hpp"

namespace dumpcmp::bindings {

namespace {

// One side of a comparison, resolved while holding the GIL: the array keeps the memory alive for the call.
struct Side {
    py::array array;
    const std::uint8_t* data = nullptr;
    DataType type = DataType::UNDEFINED;
    bool raw = false;               // bytes in device storage with an explicit data type name
    std::uint64_t elements = 0;     // for typed arrays
    std::uint64_t bytes = 0;
};

Side resolve_side(const py::array& a, const std::optional<std::string>& type_name, const char* side) {
    if (!(a.flags() & py::array::c_style))
        throw std::invalid_argument(std::string(side) + " is not C-contiguous; np.ascontiguousarray(" + side +
                                    ") makes the copy explicit (it costs a full copy of the array)");
    Side s;
    s.array = a;
    s.data = static_cast<const std::uint8_t*>(a.data());
    s.bytes = static_cast<std::uint64_t>(a.nbytes());
    if (type_name) {
        const DataTypeInfo* info = find_data_type(*type_name);
        if (info == nullptr) throw std::invalid_argument("unknown data type name '" + *type_name + "' for " + side);
        if (info->repr == Repr::none)
            throw std::invalid_argument(std::string("data type ") + info->name + " of " + side + " has no numeric value");
        s.type = info->type;
        s.raw = true;
    } else {
        s.type = numpy_data_type(a.dtype(), side);
        s.elements = static_cast<std::uint64_t>(a.size());
    }
    return s;
}

std::uint64_t element_count(const Side& x, const Side& y, std::optional<std::uint64_t> count) {
    std::optional<std::uint64_t> n = count;
    for (const Side* s : {&x, &y}) {
        if (s->raw) continue;
        const char* name = s == &x ? "x" : "y";
        if (n && *n != s->elements)
            throw std::invalid_argument(std::string(name) + " has " + std::to_string(s->elements) +
                                        " elements, expected " + std::to_string(*n) +
                                        (count ? " (count)" : " (the other side)"));
        n = s->elements;
    }
    if (!n) {
        // both raw: whole elements of x's type
        const DataTypeInfo& info = data_type_info(x.type);
        if (info.bits % 8 != 0)
            throw std::invalid_argument(std::string("x is packed ") + info.name + ": pass count= (elements)");
        const std::uint64_t width = static_cast<std::uint64_t>(info.bits / 8);
        n = x.bytes / width;
    }
    for (const Side* s : {&x, &y}) {
        if (!s->raw) continue;
        const DataTypeInfo& info = data_type_info(s->type);
        const std::uint64_t need = storage_bytes(info, *n);
        if (s->bytes != need)
            throw std::invalid_argument(std::string(s == &x ? "x" : "y") + " holds " + std::to_string(s->bytes) +
                                        " bytes; " + std::to_string(*n) + " elements of " + info.name + " take " +
                                        std::to_string(need));
    }
    return *n;
}

std::vector<int> selected(const MetricResult& r) {
    std::vector<int> out;
    for (int i = 0; i < kMetricCount; ++i)
        if (r.metrics & (1u << i)) out.push_back(i);
    return out;
}

py::object metric_value(const MetricResult& r, int i) {
    if (i == static_cast<int>(Metric::StandardDeviation))
        return py::make_tuple(r.mean_x, r.std_x, r.mean_y, r.std_y);
    return py::float_(r.values[static_cast<std::size_t>(i)]);
}

}  // namespace

void bind_metrics(py::module_& core) {
    py::module_ m = core.def_submodule("metrics",
        "The ten metrics of one tensor pair (MetricResult, compare_arrays) and the benchmarks' read probe.");
    py::class_<MetricResult> cls(m, "MetricResult",
        "Metrics of one tensor pair (x = My Output, y = Ground Truth). Metrics left out are NaN.");
    auto value_prop = [&cls](const char* name, Metric metric) {
        cls.def_property_readonly(name, [metric](const MetricResult& r) { return r.value(metric); });
    };
    value_prop("cosine_similarity", Metric::CosineSimilarity);
    value_prop("max_absolute_error", Metric::MaxAbsoluteError);
    value_prop("accumulated_relative_error", Metric::AccumulatedRelativeError);
    value_prop("relative_euclidean_distance", Metric::RelativeEuclideanDistance);
    value_prop("kullback_leibler_divergence", Metric::KullbackLeiblerDivergence);
    value_prop("mean_absolute_error", Metric::MeanAbsoluteError);
    value_prop("root_mean_square_error", Metric::RootMeanSquareError);
    value_prop("max_relative_error", Metric::MaxRelativeError);
    value_prop("mean_relative_error", Metric::MeanRelativeError);
    cls.def_property_readonly("standard_deviation", [](const MetricResult& r) {
           return py::make_tuple(r.mean_x, r.std_x, r.mean_y, r.std_y);
       }, "(mean_x, std_x, mean_y, std_y), population statistics")
        .def_readonly("mean_x", &MetricResult::mean_x)
        .def_readonly("std_x", &MetricResult::std_x)
        .def_readonly("mean_y", &MetricResult::mean_y)
        .def_readonly("std_y", &MetricResult::std_y)
        .def_readonly("mse", &MetricResult::mse)
        .def_readonly("sqnr_db", &MetricResult::sqnr_db)
        .def_readonly("min_x", &MetricResult::min_x)
        .def_readonly("max_x", &MetricResult::max_x)
        .def_readonly("min_y", &MetricResult::min_y)
        .def_readonly("max_y", &MetricResult::max_y)
        .def_readonly("count", &MetricResult::count)
        .def_readonly("nan_x", &MetricResult::nan_x)
        .def_readonly("inf_x", &MetricResult::inf_x)
        .def_readonly("nan_y", &MetricResult::nan_y)
        .def_readonly("inf_y", &MetricResult::inf_y)
        .def_readonly("scalar", &MetricResult::scalar)
        .def_readonly("both_bool", &MetricResult::both_bool)
        .def_readonly("precise", &MetricResult::precise, "Computed with float64 per-element terms (--precise).")
        .def_property_readonly("metrics", &selected, "Indices of the selected metrics, in column order.")
        .def("value", [](const MetricResult& r, int i) {
            if (i < 0 || i >= kMetricCount) throw std::out_of_range("metric index " + std::to_string(i) + " is not in 0..9");
            return metric_value(r, i);
        }, py::arg("index"), "Value of metric `index` (StandardDeviation: the 4-tuple).")
        .def("values", [](const MetricResult& r) {
            py::list out;
            for (int i : selected(r)) out.append(metric_value(r, i));
            return out;
        }, "Values of the selected metrics in column order (StandardDeviation: a 4-tuple).")
        .def("format", [](const MetricResult& r, int i) { return format_metric(i, r); }, py::arg("index"), "Metric `index` as the original tool prints it.")
        .def("formatted", [](const MetricResult& r) {
            std::vector<std::string> out;
            for (int i : selected(r)) out.push_back(format_metric(i, r));
            return out;
        }, "The selected metrics as the original tool prints them, in column order.")
        .def(py::pickle(
            // every field, so a result computed on another process (a Dask worker) prints the same bytes
            [](const MetricResult& r) {
                py::list values;
                for (double v : r.values) values.append(v);
                return py::make_tuple(1, r.metrics, r.undefined, r.cosine_zero_norms, r.scalar, r.precise, r.both_bool,
                                      values, py::make_tuple(r.mean_x, r.std_x, r.mean_y, r.std_y, r.mse, r.sqnr_db,
                                                             r.min_x, r.max_x, r.min_y, r.max_y),
                                      py::make_tuple(r.count, r.nan_x, r.inf_x, r.nan_y, r.inf_y));
            },
            [](const py::tuple& t) {
                if (t.size() != 10 || t[0].cast<int>() != 1) throw std::invalid_argument("not a pickled MetricResult");
                MetricResult r;
                r.metrics = t[1].cast<MetricMask>();
                r.undefined = t[2].cast<MetricMask>();
                r.cosine_zero_norms = t[3].cast<bool>();
                r.scalar = t[4].cast<bool>();
                r.precise = t[5].cast<bool>();
                r.both_bool = t[6].cast<bool>();
                const auto values = t[7].cast<std::vector<double>>();
                if (values.size() != r.values.size()) throw std::invalid_argument("not a pickled MetricResult");
                std::copy(values.begin(), values.end(), r.values.begin());
                const auto d = t[8].cast<std::array<double, 10>>();
                r.mean_x = d[0]; r.std_x = d[1]; r.mean_y = d[2]; r.std_y = d[3]; r.mse = d[4]; r.sqnr_db = d[5];
                r.min_x = d[6]; r.max_x = d[7]; r.min_y = d[8]; r.max_y = d[9];
                const auto n = t[9].cast<std::array<std::uint64_t, 5>>();
                r.count = n[0]; r.nan_x = n[1]; r.inf_x = n[2]; r.nan_y = n[3]; r.inf_y = n[4];
                return r;
            }))
        .def("__repr__", [](const MetricResult& r) {
            std::string s = "MetricResult(count=" + std::to_string(r.count);
            for (int i : selected(r)) s += std::string(", ") + metric_name(i) + "=" + format_metric(i, r);
            return s + ")";
        });

    m.def("metric_names", [] {
        std::vector<std::string> out;
        for (int i = 0; i < kMetricCount; ++i) out.emplace_back(metric_name(i));
        return out;
    }, "The ten built-in metrics in column order (index = position).");

    m.def("format_metric", &format_metric, py::arg("index"), py::arg("result"),
          "Metric `index` of `result` as the original tool prints it.");

    m.def("compare_arrays", [](const py::array& x, const py::array& y, std::optional<std::vector<int>> metrics,
                               unsigned threads, std::optional<std::string> x_data_type,
                               std::optional<std::string> y_data_type, std::optional<std::uint64_t> count,
                               std::optional<bool> scalar, std::size_t chunk_elements, bool precise) {
        const Side sx = resolve_side(x, x_data_type, "x");
        const Side sy = resolve_side(y, y_data_type, "y");
        const std::uint64_t n = element_count(sx, sy, count);
        CompareOptions opt;
        opt.metrics = mask_from(metrics);
        opt.threads = threads;
        opt.scalar = scalar ? *scalar : ((!sx.raw && x.ndim() == 0) || (!sy.raw && y.ndim() == 0));
        opt.chunk_elements = chunk_elements;
        opt.precise = precise;
        // Safe without the GIL: sx/sy hold references to both arrays, and no Python object is touched below.
        py::gil_scoped_release release;
        return compare(sx.data, sx.type, sy.data, sy.type, n, opt);
    }, py::arg("x"), py::arg("y"), py::kw_only(), py::arg("metrics") = py::none(), py::arg("threads") = 0u,
       py::arg("x_data_type") = py::none(), py::arg("y_data_type") = py::none(), py::arg("count") = py::none(),
       py::arg("scalar") = py::none(), py::arg("chunk_elements") = kDefaultChunkElements, py::arg("precise") = false,
       "Compare x (My Output) with y (Ground Truth): whole arrays, or raw device bytes with a data type name.");

    m.def("read_probe", [](const py::array& data, unsigned threads) {
        if (!(data.flags() & py::array::c_style)) throw std::invalid_argument("read_probe needs a C-contiguous array");
        const auto* p = static_cast<const std::uint8_t*>(data.data());
        const auto bytes = static_cast<std::uint64_t>(data.nbytes());
        py::gil_scoped_release release;
        return read_probe(p, bytes, threads);
    }, py::arg("data"), py::arg("threads") = 0u,
       "Read every byte of a contiguous buffer on `threads` threads (the benchmarks' memory-speed probe).");
}

}  // namespace dumpcmp::bindings
