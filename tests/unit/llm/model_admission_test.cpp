// A model's concurrency_limit is an admission limit kept under the model's name.
#include <gtest/gtest.h>

#include "policy/admission.h"

namespace toolbridge::policy {
namespace {

TEST(LlmModelAdmission, ConcurrencyLimitOfAModel) {
  config::Config c;
  config::Model m;
  m.name = "Qwen/Qwen3-8B";
  m.workers.push_back({"http://127.0.0.1:1", "w0"});
  m.concurrency_limit = 1;
  c.models.push_back(m);
  base::ManualClock clock;
  auto admission = std::make_shared<Admission>(c, clock);
  EXPECT_TRUE(admission->applies("Qwen/Qwen3-8B"));
  const AdmissionRequest r{"Qwen/Qwen3-8B", "", "tenant", "traj"};
  Permit first = admission->try_admit(r);
  ASSERT_TRUE(first);
  EXPECT_FALSE(admission->try_admit(r));
  first.release();
  EXPECT_TRUE(admission->try_admit(r));
}

TEST(LlmModelAdmission, NoLimitNoStage) {
  config::Config c;
  config::Model m;
  m.name = "sim";
  c.models.push_back(m);
  base::ManualClock clock;
  EXPECT_FALSE(Admission(c, clock).applies("sim"));
}

}  // namespace
}  // namespace toolbridge::policy
