#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include "dumpcmp/detail.hpp"
#include "dumpcmp/source.hpp"
#include "pycommon.hpp"

namespace dumpcmp::bindings {

namespace {

py::tuple entry_tuple(const DetailEntry& e) {
    return py::make_tuple(e.index, e.npu, e.ground_truth, e.abs_error,
                          e.rel_defined ? py::cast(e.rel_error) : py::none());
}

py::list entry_list(const std::vector<DetailEntry>& list) {
    py::list out;
    for (const DetailEntry& e : list) out.append(entry_tuple(e));
    return out;
}

// Runs the export on its own thread while this one, holding the GIL only briefly, checks for Ctrl-C every 100 ms:
// a KeyboardInterrupt sets the cancellation flag, the export removes its temporary files, and the interrupt is
// raised here once it has.
DetailResult run_cancellable(const TensorSource& x, const TensorSource& y, DetailOptions& options) {
    std::atomic<bool> cancel{false};
    options.cancel = &cancel;
    DetailResult result;
    std::exception_ptr error;
    std::mutex mutex;
    std::condition_variable cv;
    bool done = false;
    std::thread job;
    {
        py::gil_scoped_release release;  // the sources keep their memory alive; no Python object is touched
        job = std::thread([&] {
            try {
                result = export_detail(x, y, options);
            } catch (...) {
                error = std::current_exception();
            }
            std::lock_guard<std::mutex> lock(mutex);
            done = true;
            cv.notify_all();
        });
    }
    for (;;) {
        bool finished;
        {
            py::gil_scoped_release release;
            std::unique_lock<std::mutex> lock(mutex);
            finished = cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return done; });
        }
        if (finished) break;
        if (PyErr_CheckSignals() != 0) {
            cancel.store(true);
            {
                py::gil_scoped_release release;
                job.join();
            }
            throw py::error_already_set();
        }
    }
    {
        py::gil_scoped_release release;
        job.join();
    }
    if (error) std::rethrow_exception(error);
    return result;
}

}  // namespace

void bind_detail(py::module_& core) {
    py::module_ m = core.def_submodule("detail",
        "Element-level detail files (export_detail) and how they print values.");
    py::register_exception<OutputError>(m, "OutputError", PyExc_OSError);

    m.def("file_count", &detail_file_count, py::arg("count"), py::arg("max_rows"),
          "Detail CSV files for `count` rows at `max_rows` rows a file (at least one).");
    m.def("format_fixed6", [](double v) {
        char buf[kMaxFixedChars];
        return std::string(buf, format_fixed6(v, buf));
    }, py::arg("value"), "A value as the detail files print it: '%.6f', NaN as 'NaN', infinities as 'inf'/'-inf'.");

    m.def("export_detail", [](const std::shared_ptr<TensorSource>& x, const std::shared_ptr<TensorSource>& y,
                              std::vector<std::int64_t> shape, const std::string& fmt,
                              std::vector<std::string> csv_paths, std::uint64_t max_rows, std::string coordinate_header,
                              std::optional<std::vector<std::string>> npy_paths, std::string summary_path,
                              std::string top_path, std::size_t top_n, std::string npu_name,
                              std::string ground_truth_name, std::string layout_name, unsigned threads,
                              std::size_t block_rows) {
        DetailOptions o;
        o.shape = std::move(shape);
        if (fmt == "csv") {
            o.format = DetailFormat::csv;
        } else if (fmt == "npy") {
            o.format = DetailFormat::npy;
            if (!npy_paths || npy_paths->size() != kNpyColumns)
                throw std::invalid_argument("the npy format needs six column paths (index, coordinates, npu, "
                                            "ground_truth, abs_error, rel_error)");
            std::copy(npy_paths->begin(), npy_paths->end(), o.npy_paths.begin());
        } else {
            throw std::invalid_argument("detail format is 'csv' or 'npy', not '" + fmt + "'");
        }
        o.csv_paths = std::move(csv_paths);
        o.max_rows = max_rows;
        o.coordinate_header = std::move(coordinate_header);
        o.summary_path = std::move(summary_path);
        o.top_path = std::move(top_path);
        o.top_n = top_n;
        o.npu_name = std::move(npu_name);
        o.ground_truth_name = std::move(ground_truth_name);
        o.layout_name = std::move(layout_name);
        o.threads = threads;
        o.block_rows = block_rows;
        const DetailResult r = run_cancellable(*x, *y, o);
        py::dict out;
        out["total_count"] = r.summary.total_count;
        out["min_abs_error"] = r.summary.min_abs_error;
        out["max_abs_error"] = r.summary.max_abs_error;
        out["min_rel_error"] = r.summary.min_rel_error;
        out["max_rel_error"] = r.summary.max_rel_error;
        out["rel_count"] = r.summary.rel_count;
        out["top_abs"] = entry_list(r.top_abs);
        out["top_rel"] = entry_list(r.top_rel);
        py::list files;  // paths the caller gave, UTF-8 or not
        for (const std::string& f : r.files) files.append(file_text(f));
        out["files"] = files;
        return out;
    }, py::arg("x"), py::arg("y"), py::kw_only(), py::arg("shape"), py::arg("format") = "csv",
       py::arg("csv_paths") = std::vector<std::string>{}, py::arg("max_rows") = kDefaultDetailRows,
       py::arg("coordinate_header") = "N C H W", py::arg("npy_paths") = py::none(), py::arg("summary_path") = "",
       py::arg("top_path") = "", py::arg("top_n") = 20, py::arg("npu_name") = "", py::arg("ground_truth_name") = "",
       py::arg("layout_name") = "", py::arg("threads") = 0u, py::arg("block_rows") = kDefaultDetailBlockRows,
       "Write the element-level detail of x (NPU dump) against y (ground truth); the dumpcmp.detail module names "
       "the files. Returns the summary numbers, the top lists as (index, npu, ground_truth, abs_error, rel_error "
       "or None) tuples and the files written. Nothing is left behind on error or Ctrl-C.");
}

}  // namespace dumpcmp::bindings
