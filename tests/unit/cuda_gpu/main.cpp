// The main of typex_cuda_gpu_tests: the tests of typex::cuda that need a GPU, compiled everywhere
// nvcc is, run only where a GPU is.
//
// Test cases belong to one of two doctest suites (TEST_SUITE("gpu") / TEST_SUITE("no_gpu")):
//   "gpu"     need a CUDA GPU;
//   "no_gpu"  check what happens without one (make_native_device's error); they run only there.
// The main asks cudaGetDeviceCount (through typex::cuda::device_count: its error code, not its count),
// then runs the selected test cases of the suite that fits this machine and prints, by name, each
// selected one of the other suite as skipped. Exit status: doctest's when something failed; otherwise
// kSkipped when some selected test case was skipped (CTest's SKIP_RETURN_CODE: tests/CMakeLists.txt
// runs each test case as its own ctest test, which is then reported "Skipped", not "Passed"), else 0.
// Query options (--list-test-cases, --help, ...) go to doctest unchanged: the build lists the test
// cases without asking for a GPU (doctest_discover_tests).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <typex/backend/cuda/device.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int kSkipped = 77;  // (the automake convention; tests/CMakeLists.txt's SKIP_RETURN_CODE)

// Collects the test cases that pass the command line's filters (doctest's --list-test-cases query).
struct selection_reporter final : doctest::IReporter {
  static inline std::vector<std::pair<std::string, std::string>>* out = nullptr;  // (name, suite)

  explicit selection_reporter(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData& q) override {
    if (out == nullptr) return;  // (chosen by hand on the command line: nothing to collect into)
    for (unsigned i = 0; i < q.num_data; ++i) out->emplace_back(q.data[i]->m_name, q.data[i]->m_test_suite);
  }
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};
REGISTER_REPORTER("typex_selection", 0, selection_reporter);

bool is_query(const char* arg) {
  // (doctest's query options, with or without its --dt- prefix)
  static const char* const queries[] = {"list-test-cases", "ltc", "list-test-suites", "lts", "list-reporters", "lr",
                                        "count", "c", "help", "h", "?", "version", "v", "no-run"};
  std::string a = arg;
  while (!a.empty() && a.front() == '-') a.erase(a.begin());
  if (a.rfind("dt-", 0) == 0) a.erase(0, 3);
  a = a.substr(0, a.find('='));
  for (const char* q : queries) {
    if (a == q) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (is_query(argv[i])) return doctest::Context(argc, argv).run();
  }

  std::string why;
  const int gpus = typex::cuda::device_count(&why);
  const char* const runnable_suite = gpus > 0 ? "gpu" : "no_gpu";
  const char* const skipped_suite = gpus > 0 ? "no_gpu" : "gpu";

  // The selected test cases (the command line's filters), without running them.
  std::vector<std::pair<std::string, std::string>> selected;
  {
    selection_reporter::out = &selected;
    // (--list-test-cases is a flag doctest takes from the command line only, not from setOption)
    std::vector<const char*> args(argv, argv + argc);
    args.push_back("--dt-list-test-cases");
    args.push_back("--dt-reporters=typex_selection");
    doctest::Context query(static_cast<int>(args.size()), args.data());
    query.run();
    selection_reporter::out = nullptr;
  }
  int runnable = 0;
  std::vector<std::string> skipped;
  for (const auto& [name, suite] : selected) {
    if (suite == runnable_suite) {
      ++runnable;
    } else {
      skipped.push_back(name);
    }
  }

  if (gpus > 0) {
    std::printf("typex_cuda_gpu_tests: %d CUDA GPU%s\n", gpus, gpus == 1 ? "" : "s");
  } else {
    std::printf("typex_cuda_gpu_tests: no GPU to run on (%s)\n", why.c_str());
  }
  for (const auto& name : skipped) {
    std::printf("SKIPPED: %s (%s)\n", name.c_str(),
                gpus > 0 ? "checks the error without a GPU; this machine has one" : "needs a CUDA GPU");
  }
  std::fflush(stdout);

  int rc = 0;
  if (runnable > 0) {
    doctest::Context context(argc, argv);
    context.addFilter("test-suite-exclude", skipped_suite);
    rc = context.run();
  }
  if (rc != 0) return rc;
  if (!skipped.empty()) {
    std::printf("typex_cuda_gpu_tests: %zu test case%s skipped, %d run\n", skipped.size(), skipped.size() == 1 ? "" : "s",
                runnable);
    return kSkipped;
  }
  return 0;
}
