// The public Handle: a thin owner of the dispatch layer, so that hipgn.hpp names no internal
// or GPU runtime type. Every call forwards to the Dispatcher.
#include "hipgn/dispatcher.hpp"

namespace hipgn {

Handle::Handle(std::unique_ptr<Dispatcher> dispatcher) : dispatcher_(std::move(dispatcher)) {}
Handle::~Handle() = default;

Status Handle::create(std::unique_ptr<Handle>* out) {
  std::unique_ptr<Dispatcher> d;
  const Status s = Dispatcher::create(&d);
  out->reset(new Handle(std::move(d)));
  return s;
}

Status Handle::run(const Problem& p, const Tensors& t, void* stream, const std::string& instance) {
  return dispatcher_->run(p, t, static_cast<hipStream_t>(stream), instance);
}

Status Handle::run_with_workspace(const Problem& p, const Tensors& t, void* workspace, std::size_t workspace_bytes,
                                  void* stream, const std::string& instance) {
  return dispatcher_->run_with_workspace(p, t, workspace, workspace_bytes, static_cast<hipStream_t>(stream), instance);
}

Status Handle::workspace_size(const Problem& p, const std::string& instance, std::size_t* bytes) const {
  return dispatcher_->workspace_size(p, instance, bytes);
}

std::size_t Handle::workspace_bytes(const Problem& p, const std::string& instance) const {
  return dispatcher_->workspace_bytes(p, instance);
}

Status Handle::instance_for(const Problem& p, std::string* name) const {
  if (Status s = validate(p); !s.ok()) return s;
  Status why;
  const Instance* inst = dispatcher_->choose(p, nullptr, &why);
  if (!inst) return why;
  *name = inst->name();
  return Status::success();
}

const std::string& Handle::device_name() const { return dispatcher_->device().name; }
const std::string& Handle::device_arch() const { return dispatcher_->device().arch; }
int Handle::device_compute_units() const { return dispatcher_->device().compute_units; }

Status Handle::set_tuned(const Problem& p, const std::string& instance, double us) {
  return dispatcher_->set_tuned(p, instance, us);
}

Status Handle::tune(const Problem& p, void* stream, TuneResult* out, const TuneOptions& options) {
  return dispatcher_->tune(p, static_cast<hipStream_t>(stream), out, options);
}

Status Handle::load_tuning_db(const std::string& path) { return dispatcher_->load_tuning_db(path); }
Status Handle::save_tuning_db(const std::string& path) const { return dispatcher_->save_tuning_db(path); }
const std::string& Handle::tuning_db_path() const { return dispatcher_->tuning_db_path(); }

}  // namespace hipgn
