// tessera_torch._C: the process group class and the symmetric pool, for tessera_torch/__init__.py.
#include <pybind11/chrono.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/python.h>

#include "process_group.h"
#include "symm_mem.h"
#include "symmetric.h"

namespace py = pybind11;
using namespace tessera_torch;

PYBIND11_MODULE(_C, m) {
  m.doc() = "Tessera's torch.distributed backend (use it through tessera_torch)";
  py::module::import("torch.distributed");  // registers c10d::Backend, the base class below
  py::class_<ProcessGroupTessera, c10d::Backend, c10::intrusive_ptr<ProcessGroupTessera>>(m, "ProcessGroupTessera")
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                       std::chrono::duration<double> timeout, const std::string& group_id,
                       const std::vector<int64_t>& global_ranks) {
             const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
             return c10::make_intrusive<ProcessGroupTessera>(store, rank, size, ms, group_id, global_ranks);
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"), py::arg("group_id"),
           py::arg("global_ranks"), py::call_guard<py::gil_scoped_release>())
      .def("register_tensor", &ProcessGroupTessera::register_tensor, py::arg("tensor"),
           py::call_guard<py::gil_scoped_release>())
      .def("deregister_tensor", &ProcessGroupTessera::deregister_tensor, py::arg("handle"),
           py::call_guard<py::gil_scoped_release>())
      .def("set_compression", &ProcessGroupTessera::set_compression, py::arg("mode"), py::arg("error_feedback"),
           py::call_guard<py::gil_scoped_release>())
      .def("set_allgather_compression", &ProcessGroupTessera::set_allgather_compression, py::arg("mode"),
           py::call_guard<py::gil_scoped_release>())
      .def("shrink_for_next_world", &ProcessGroupTessera::shrink_for_next_world,
           py::call_guard<py::gil_scoped_release>())
      .def("grow_for_next_world", &ProcessGroupTessera::grow_for_next_world,
           py::call_guard<py::gil_scoped_release>())
      .def_property("inline_bytes", &ProcessGroupTessera::inline_bytes, &ProcessGroupTessera::set_inline_bytes,
                    "Calls of at most this many bytes made while the group's stream is idle run on the calling thread");
  m.def("incarnation", [] {
    int k = 0;
    return tesseraIncarnation(&k) == tesseraSuccess ? k : 0;
  }, "0 in a process started with the job, k in the k-th replacement tessera-run --restarts started");
  m.def("shutdown", &tessera_torch::shutdown, "Ends Tessera if this module started it (collective over all ranks)",
        py::call_guard<py::gil_scoped_release>());
  m.def("empty", [](std::vector<int64_t> sizes, py::object dtype) {
          return symmetric_empty(sizes, torch::python::detail::py_object_to_dtype(dtype));
        });
  m.def("is_symmetric", &is_symmetric);
  m.def("pool_bytes", &pool_bytes);
  m.def("pool_free_bytes", &pool_free_bytes);
  m.def("register_symm_mem", &register_symm_mem,
        "Makes Tessera torch.distributed._symmetric_memory's allocator for CPU tensors (backend \"TESSERA\")");
}
