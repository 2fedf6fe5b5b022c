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

TEST(LlmModelAdmission, AReloadChangesAModelsLimitAndKeepsItsPermits) {
  config::Config c;
  config::Model m;
  m.name = "sim";
  m.concurrency_limit = 2;
  c.models.push_back(m);
  base::ManualClock clock;
  auto admission = std::make_shared<Admission>(c, clock);
  const AdmissionRequest r{"sim", "", "tenant", "traj"};
  Permit a = admission->try_admit(r);
  Permit b = admission->try_admit(r);
  ASSERT_TRUE(a && b);
  // Shrunk to 1: the two in flight keep their permits and count, so no third one goes.
  c.models[0].concurrency_limit = 1;
  admission->reconfigure(c);
  EXPECT_FALSE(admission->try_admit(r));
  a.release();
  EXPECT_FALSE(admission->try_admit(r));  // still one in flight, the limit is 1
  b.release();
  Permit c1 = admission->try_admit(r);
  EXPECT_TRUE(c1);
  // A model added by a reload gets its limit; a removed one is unlimited (no stage).
  config::Model added;
  added.name = "new";
  added.concurrency_limit = 1;
  c.models = {added};
  admission->reconfigure(c);
  EXPECT_TRUE(admission->applies("new"));
  EXPECT_FALSE(admission->applies("sim"));
  Permit n = admission->try_admit({"new", "", "tenant", "traj"});
  ASSERT_TRUE(n);
  EXPECT_FALSE(admission->try_admit({"new", "", "tenant", "traj"}));
}

}  // namespace
}  // namespace toolbridge::policy
