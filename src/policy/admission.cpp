#include "policy/admission.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace toolbridge::policy {

Permit& Permit::operator=(Permit&& other) noexcept {
  if (this == &other) return *this;
  release();
  owner_ = std::move(other.owner_);
  other.owner_ = nullptr;
  slots_ = other.slots_;
  server_ = other.server_;
  tenant_ = std::move(other.tenant_);
  trajectory_ = std::move(other.trajectory_);
  admitted_at_ = other.admitted_at_;
  return *this;
}

void Permit::release() {
  if (!owner_) return;
  // Cleared before the slots are given back, so that nothing can release twice.
  std::shared_ptr<Admission> owner = std::move(owner_);
  owner_ = nullptr;
  owner->release(*this);
}

Admission::Admission(const config::Config& config, const base::Clock& clock) : clock_(clock) {
  configure_gateway(config.gateway);
  for (const auto& cfg : config.servers) configure(server(cfg.name), cfg);
  configure_models(config.models);
}

void Admission::configure_models(const std::vector<config::Model>& models) {
  // Models (LLM routing) are admitted like servers, by name: concurrency_limit per model. A model
  // a reload removed keeps its state (its last requests release into it), unlimited.
  for (const std::string& name : model_names_) server(name).slot.limit = 0;
  model_names_.clear();
  for (const auto& model : models) {
    server(model.name).slot.limit = model.concurrency_limit;
    model_names_.push_back(model.name);
  }
}

void Admission::configure(Server& s, const config::Server& cfg) {
  s.capacity = false;
  s.slot.limit = 0;
  if (!cfg.adaptive_limit) s.adaptive.reset();
  if (cfg.adaptive_limit) {
    // An adaptive limit keeps what it learnt across a reload.
    if (!s.adaptive) s.adaptive.emplace(cfg.adaptive, clock_.now());
    s.slot.limit = s.adaptive->limit();
  } else if (cfg.concurrency_limit > 0) {
    s.slot.limit = cfg.concurrency_limit;
  } else if (cfg.policy != config::Policy::kPerSession) {
    // No limit configured: the server's own capacity (max_in_flight on each instance it may
    // run) is the limit, so calls past it wait in the fair queue instead of being refused by
    // a full instance. per_session instances each serve one trajectory: no shared capacity.
    s.slot.limit = cfg.max_in_flight * cfg.effective_max_instances();
    s.capacity = true;
  }
  configure_tools(s, cfg);
}

void Admission::configure_tools(Server& s, const config::Server& cfg) {
  // A tool whose limit is gone keeps its slot (calls in flight release into it), unlimited.
  for (auto& [tool, slot] : s.tools) slot.limit = 0;
  for (const auto& [tool, limit] : cfg.tool_limits) s.tools[tool].limit = limit;
}

void Admission::configure_gateway(const config::Gateway& g) {
  global_.limit = g.max_calls_in_flight;
  default_tenant_limit_ = g.tenant_limit;
  trajectory_limit_ = g.trajectory_limit;
  queue_size_ = g.admission_queue_size;
  for (auto& [name, t] : tenants_) t = TenantSlot{.slot = {.limit = 0, .in_use = t.slot.in_use}};
  bool tenant_limits = default_tenant_limit_ > 0;
  for (const auto& [name, t] : g.tenants) {
    TenantSlot& slot = tenants_[name];
    slot.configured = true;
    slot.weight = t.weight;
    slot.slot.limit = t.limit;
    tenant_limits = tenant_limits || t.limit > 0;
  }
  // A tenant a reload took out of the config lives on only while it holds calls.
  std::erase_if(tenants_,
                [](const auto& e) { return !e.second.configured && e.second.slot.in_use == 0; });
  limits_everywhere_ = global_.limit > 0 || tenant_limits || trajectory_limit_ > 0;
}

void Admission::reconfigure(const config::Config& config) {
  configure_gateway(config.gateway);
  for (const auto& cfg : config.servers) configure(server(cfg.name), cfg);
  configure_models(config.models);
  pump();  // a limit that grew lets waiting calls in now
}

Admission::Server* Admission::find(std::string_view server) {
  auto it = by_name_.find(server);
  return it == by_name_.end() ? nullptr : it->second;
}

const Admission::Server* Admission::find(std::string_view server) const {
  auto it = by_name_.find(server);
  return it == by_name_.end() ? nullptr : it->second;
}

Admission::Server& Admission::server(std::string_view name) {
  if (Server* s = find(name)) return *s;
  // Calls are routed to configured servers only; a name from elsewhere still gets a state.
  auto s = std::make_unique<Server>();
  s->name = std::string(name);
  Server& ref = *s;
  by_name_[s->name] = s.get();
  servers_.push_back(std::move(s));
  return ref;
}

bool Admission::applies(std::string_view server) const {
  if (limits_everywhere_) return true;
  const Server* s = find(server);
  return s && (s->slot.limit > 0 || s->adaptive || !s->tools.empty());
}

std::size_t Admission::limit_of_tenant(std::string_view tenant) const {
  auto it = tenants_.find(tenant);
  if (it != tenants_.end() && it->second.configured && it->second.slot.limit > 0)
    return it->second.slot.limit;
  return default_tenant_limit_;
}

double Admission::weight(const std::string& tenant) const {
  auto it = tenants_.find(tenant);
  return it == tenants_.end() ? 1.0 : it->second.weight;
}

Admission::Block Admission::blocked(const Server& s, const AdmissionRequest& r) const {
  if (global_.full() || s.slot.full()) return Block::kShared;
  if (!r.tool.empty() && !s.tools.empty()) {
    auto it = s.tools.find(r.tool);
    if (it != s.tools.end() && it->second.full()) return Block::kOwn;
  }
  if (const std::size_t limit = limit_of_tenant(r.tenant); limit > 0) {
    auto it = tenants_.find(r.tenant);
    if (it != tenants_.end() && it->second.slot.in_use >= limit) return Block::kOwn;
  }
  if (trajectory_limit_ > 0) {
    auto it = trajectories_.find(r.trajectory);
    if (it != trajectories_.end() && it->second.in_use >= trajectory_limit_) return Block::kOwn;
  }
  return Block::kNone;
}

std::string Admission::full_limit(const Server& s, const AdmissionRequest& r) const {
  if (global_.full()) return fmt::format("gateway.max_calls_in_flight ({})", global_.limit);
  if (s.slot.full()) {
    if (s.capacity) {
      return fmt::format("the capacity of server '{}' (servers.{}.max_in_flight × instances: {})",
                         s.name, s.name, s.slot.limit);
    }
    return fmt::format("servers.{}.concurrency_limit ({}{})", s.name, s.slot.limit,
                       s.adaptive ? ", adaptive" : "");
  }
  if (!r.tool.empty()) {
    auto it = s.tools.find(r.tool);
    if (it != s.tools.end() && it->second.full())
      return fmt::format("servers.{}.tool_limits.{} ({})", s.name, r.tool, it->second.limit);
  }
  if (const std::size_t limit = limit_of_tenant(r.tenant); limit > 0) {
    auto it = tenants_.find(r.tenant);
    if (it != tenants_.end() && it->second.slot.in_use >= limit)
      return fmt::format("the limit of tenant '{}' ({})", r.tenant, limit);
  }
  if (trajectory_limit_ > 0) {
    auto it = trajectories_.find(r.trajectory);
    if (it != trajectories_.end() && it->second.in_use >= trajectory_limit_)
      return fmt::format("gateway.trajectory_limit ({})", trajectory_limit_);
  }
  return {};
}

Permit Admission::take(Server& s, const AdmissionRequest& r) {
  Permit p;
  p.owner_ = shared_from_this();
  p.server_ = &s;
  p.admitted_at_ = clock_.now();
  auto hold = [&p](Permit::Kind kind, AdmissionSlot& slot) {
    ++slot.in_use;
    p.slots_[kind] = &slot;
  };
  hold(Permit::kGlobal, global_);
  hold(Permit::kServer, s.slot);
  if (!r.tool.empty() && !s.tools.empty()) {
    if (auto it = s.tools.find(r.tool); it != s.tools.end()) hold(Permit::kTool, it->second);
  }
  if (limit_of_tenant(r.tenant) > 0) {
    auto it = tenants_.find(r.tenant);
    if (it == tenants_.end()) it = tenants_.emplace(std::string(r.tenant), TenantSlot{}).first;
    hold(Permit::kTenant, it->second.slot);
    p.tenant_ = r.tenant;
  }
  if (trajectory_limit_ > 0) {
    auto it = trajectories_.find(r.trajectory);
    if (it == trajectories_.end())
      it = trajectories_.emplace(std::string(r.trajectory), AdmissionSlot{}).first;
    hold(Permit::kTrajectory, it->second);
    p.trajectory_ = r.trajectory;
  }
  return p;
}

void Admission::release(Permit& p) {
  const auto now = clock_.now();
  for (AdmissionSlot* slot : p.slots_) {
    if (slot) --slot->in_use;
  }
  // Slots of tenants not in the config and of trajectories live only while they hold calls.
  if (AdmissionSlot* t = p.slots_[Permit::kTenant]; t && t->in_use == 0) {
    auto it = tenants_.find(p.tenant_);
    if (it != tenants_.end() && !it->second.configured) tenants_.erase(it);
  }
  if (AdmissionSlot* t = p.slots_[Permit::kTrajectory]; t && t->in_use == 0) {
    trajectories_.erase(trajectories_.find(p.trajectory_));
  }
  p.slots_ = {};
  Server& s = *static_cast<Server*>(p.server_);
  const auto latency = now - p.admitted_at_;
  const double seconds = std::chrono::duration<double>(latency).count();
  s.mean_latency = s.mean_latency == 0 ? seconds : 0.9 * s.mean_latency + 0.1 * seconds;
  if (s.adaptive && s.adaptive->sample(latency, now)) s.slot.limit = s.adaptive->limit();
  pump();
}

Permit Admission::try_admit(const AdmissionRequest& request) {
  Server& s = server(request.server);
  // Anything waiting goes first: a newcomer only takes a free slot when nobody queues.
  if (queued_total_ > 0 || blocked(s, request) != Block::kNone) return {};
  return take(s, request);
}

bool Admission::enqueue(AdmissionWaiter& waiter) {
  Server& s = server(waiter.server);
  if (s.queued >= queue_size_) return false;
  auto it = s.tenants.find(waiter.tenant);
  if (it == s.tenants.end()) {
    it = s.tenants.emplace(waiter.tenant, TenantQueue{}).first;
    s.ring.push_back(waiter.tenant);
  }
  it->second.calls.push_back(&waiter);
  ++s.queued;
  ++queued_total_;
  waiter.queued_ = true;
  pump();
  return true;
}

Admission::Withdrawn Admission::withdraw(AdmissionWaiter& waiter) {
  if (!waiter.queued_) return {};
  Server& s = server(waiter.server);
  auto it = s.tenants.find(waiter.tenant);
  TenantQueue& t = it->second;
  auto pos = std::find(t.calls.begin(), t.calls.end(), &waiter);
  Withdrawn out{static_cast<std::size_t>(pos - t.calls.begin()) + 1, s.queued,
                full_limit(s, waiter.request())};
  // Not held by a limit of its own: calls ahead of it in the fair queue took the free slots.
  if (out.held_by.empty()) out.held_by = "the calls queued ahead of it";
  t.calls.erase(pos);
  --s.queued;
  --queued_total_;
  waiter.queued_ = false;
  if (t.calls.empty()) {
    s.tenants.erase(it);
    s.ring.erase(std::find(s.ring.begin(), s.ring.end(), waiter.tenant));
  }
  // It held no slot, but it may have stood in front of calls that can go.
  pump();
  return out;
}

void Admission::pump() {
  if (pumping_) {
    // Called back from admitted() (a permit released at once): the running pump goes on.
    repump_ = true;
    return;
  }
  pumping_ = true;
  do {
    repump_ = false;
    const std::size_t n = servers_.size();
    for (std::size_t i = 0; i < n && queued_total_ > 0; ++i) {
      Server& s = *servers_[(next_server_ + i) % n];
      if (s.queued > 0) pump(s);
    }
    // Servers take turns at going first: they share the global limit.
    if (n > 0) next_server_ = (next_server_ + 1) % n;
  } while (repump_ && queued_total_ > 0);
  pumping_ = false;
}

void Admission::pump(Server& s) {
  // Deficit round robin: each visit to a tenant adds its weight to its deficit; a call costs 1.
  // A tenant whose first call is held by its own limit (tenant, trajectory, tool) is passed over;
  // a full server or gateway stops everyone.
  std::size_t passed_over = 0;
  auto rotate = [&s] {
    s.ring.push_back(std::move(s.ring.front()));
    s.ring.pop_front();
  };
  while (!s.ring.empty() && passed_over < s.ring.size()) {
    auto it = s.tenants.find(s.ring.front());
    TenantQueue& t = it->second;
    if (t.deficit < 1) {
      t.deficit += weight(it->first);
      if (t.deficit < 1) {
        rotate();
        continue;
      }
    }
    AdmissionWaiter& w = *t.calls.front();
    const AdmissionRequest request = w.request();
    const Block b = blocked(s, request);
    if (b == Block::kShared) return;
    if (b == Block::kOwn) {
      rotate();
      ++passed_over;
      continue;
    }
    t.calls.pop_front();
    --s.queued;
    --queued_total_;
    w.queued_ = false;
    t.deficit -= 1;
    Permit permit = take(s, request);
    if (t.calls.empty()) {
      s.tenants.erase(it);
      s.ring.pop_front();
    } else if (t.deficit < 1) {
      rotate();
    }
    passed_over = 0;
    w.admitted(std::move(permit));
  }
}

std::size_t Admission::retry_after_seconds(std::string_view server) const {
  const Server* s = find(server);
  if (!s) return 1;
  // The queue drains at about `concurrency` calls per mean latency.
  const std::size_t concurrency =
      std::max<std::size_t>(1, s->slot.limit > 0 ? s->slot.limit : s->slot.in_use);
  const double seconds =
      s->mean_latency * static_cast<double>(s->queued + 1) / static_cast<double>(concurrency);
  return std::clamp<std::size_t>(static_cast<std::size_t>(std::ceil(seconds)), 1, 3600);
}

std::string Admission::overloaded_message(std::string_view server) const {
  const Server* s = find(server);
  const std::size_t queued = s ? s->queued : 0;
  return fmt::format("{} is overloaded: {} calls queued; retry in ~{} s", server, queued,
                     retry_after_seconds(server));
}

std::vector<Admission::ServerView> Admission::servers() const {
  std::vector<ServerView> out;
  for (const auto& s : servers_) {
    ServerView v;
    v.name = s->name;
    v.limit = s->slot.limit;
    v.adaptive = s->adaptive.has_value();
    if (s->adaptive) v.min_latency = s->adaptive->min_latency();
    v.in_flight = s->slot.in_use;
    v.queued = s->queued;
    for (const auto& [tenant, q] : s->tenants)
      v.queued_by_tenant.emplace_back(tenant, q.calls.size());
    for (const auto& [tool, slot] : s->tools) v.tools.emplace_back(tool, slot);
    out.push_back(std::move(v));
  }
  return out;
}

std::size_t Admission::tenant_in_flight(std::string_view tenant) const {
  auto it = tenants_.find(tenant);
  return it == tenants_.end() ? 0 : it->second.slot.in_use;
}

std::size_t Admission::tenant_limit(std::string_view tenant) const {
  return limit_of_tenant(tenant);
}

std::size_t Admission::trajectory_in_flight(std::string_view trajectory) const {
  auto it = trajectories_.find(trajectory);
  return it == trajectories_.end() ? 0 : it->second.in_use;
}

}  // namespace toolbridge::policy
