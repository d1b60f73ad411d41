// Outputs that survive concurrent and interrupted runs: `dtsim run` processes writing into one
// folder at once, writes and runs interrupted by a signal, a folder another writer holds, and
// the temporaries every failure must take away.
#include "scenarios/output_files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "tests/support/temporary_directory.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using test_support::TemporaryDirectory;
const std::string kSource = DTSIM_SOURCE_DIR;

// Starts `dtsim ARGS…` with its output thrown away, or its stderr readable from
// *error_pipe when that is given; returns its pid.
pid_t start_dtsim(const std::vector<std::string>& args, int* error_pipe = nullptr) {
  std::vector<std::string> words = {DTSIM_PATH};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  int pipe_ends[2] = {-1, -1};
  if (error_pipe != nullptr && pipe2(pipe_ends, O_CLOEXEC) == 0) {
    posix_spawn_file_actions_adddup2(&actions, pipe_ends[1], STDERR_FILENO);
  } else {
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  }
  // The signals the tests send act as they do on a fresh terminal, whatever the test runner set.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t signals;
  sigemptyset(&signals);
  posix_spawnattr_setsigmask(&attributes, &signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  posix_spawnattr_setsigdefault(&attributes, &signals);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const int error = posix_spawn(&pid, argv[0], &actions, &attributes, argv.data(), environ);
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  EXPECT_EQ(error, 0) << argv[0];
  if (pipe_ends[1] >= 0) {
    close(pipe_ends[1]);
    *error_pipe = pipe_ends[0];
  }
  return pid;
}

int wait_for(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// FNV-1a, 64-bit, written here from its definition (http://www.isthe.com/chongo/tech/comp/fnv/).
std::string fnv1a64(const std::string& bytes) {
  std::uint64_t hash = 14695981039346656037ull;
  for (const char byte : bytes) hash = (hash ^ static_cast<unsigned char>(byte)) * 1099511628211ull;
  char text[32];
  std::snprintf(text, sizeof text, "fnv1a64:%016llx", static_cast<unsigned long long>(hash));
  return text;
}

// The folder holds exactly timeline.json and report.json, both complete, and the report names
// this very timeline.
void expect_one_runs_outputs(const fs::path& folder) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"report.json", "timeline.json"}));  // no temporaries
  const std::string timeline = slurp(folder / "timeline.json");
  EXPECT_TRUE(nlohmann::json::accept(timeline));
  const nlohmann::json report = nlohmann::json::parse(slurp(folder / "report.json"));
  EXPECT_EQ(report["timeline_digest"], fnv1a64(timeline));
}

const std::string kDefault = kSource + "/scenarios/default.toml";

// Before: two runs shared one <file>.partial; 3 of 5 rounds left an invalid timeline while
// the surviving run exited 0, 1 of 5 a timeline of one run beside the report of the other.
TEST(OutputFilesTest, ConcurrentRunsIntoOneFolderLeaveOneRunsCompleteFiles) {
  const TemporaryDirectory scratch("dtsim-concurrent");
  const fs::path out = scratch / "out";
  for (int round = 0; round < 5; ++round) {
    std::vector<pid_t> runs;  // different buckets: different timelines and reports
    for (const char* bucket : {"10", "25", "50"}) {
      runs.push_back(start_dtsim({"run", kDefault, "--set", std::string("ddp.bucket_cap_mb=") + bucket, "--set",
                                  "training.steps=3", "-o", out.string()}));
    }
    for (const pid_t pid : runs) {
      const int status = wait_for(pid);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "round " << round << ", status " << status;
    }
    expect_one_runs_outputs(out);
  }
}

// A signal while a write is under way (deterministically: the writer of the second file tells
// the parent it is writing, then waits): the temporaries go, the previous files stay as they
// were, and the process ends as the signal ends it.
TEST(OutputFilesTest, ASignalDuringAWriteRemovesTheTemporariesAndEndsTheProcess) {
  const TemporaryDirectory scratch("dtsim-interrupted");
  const fs::path a = scratch / "a.json", b = scratch / "b.json";
  scenarios::write_files_atomically({{a, [](std::ostream& out) { out << "old a"; }}, {b, [](std::ostream& out) { out << "old b"; }}});
  for (const int signal : {SIGINT, SIGTERM, SIGHUP}) {
    int writing[2];
    ASSERT_EQ(pipe(writing), 0);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      std::signal(signal, SIG_DFL);
      close(writing[0]);
      scenarios::write_files_atomically({{a, [](std::ostream& out) { out << "new a"; }},
                                         {b, [&](std::ostream& out) {
                                            out << "new b, half" << std::flush;
                                            (void)!write(writing[1], "w", 1);
                                            for (;;) pause();
                                          }}});
      _exit(0);
    }
    close(writing[1]);
    char byte = 0;
    ASSERT_EQ(read(writing[0], &byte, 1), 1) << "the child never started writing";
    close(writing[0]);
    kill(child, signal);
    const int status = wait_for(child);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == signal) << "status " << status;
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(scratch.path())) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"a.json", "b.json"}));  // no temporary left
    EXPECT_EQ(slurp(a), "old a");
    EXPECT_EQ(slurp(b), "old b");
  }
}

// `dtsim run` interrupted at any moment — while it simulates, writes or renames — leaves a
// folder with one run's complete pair of files, the previous run's or its own, and no
// temporary; the process ends by the signal or, when the signal came after it finished, with 0.
TEST(OutputFilesTest, ARunInterruptedAtAnyMomentLeavesOneRunsCompleteFiles) {
  const TemporaryDirectory scratch("dtsim-interrupted-run");
  const fs::path out = scratch / "out";
  ASSERT_EQ(wait_for(start_dtsim({"run", kDefault, "-o", out.string()})), 0);
  for (int delay_ms = 0; delay_ms <= 1000; delay_ms += 100) {
    // 10 steps: a ~65 MB timeline, simulated and written in about half a second here.
    const pid_t pid = start_dtsim({"run", kDefault, "--set", "training.steps=10", "-o", out.string()});
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    kill(pid, SIGINT);
    const int status = wait_for(pid);
    EXPECT_TRUE((WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) || (WIFEXITED(status) && WEXITSTATUS(status) == 0))
        << "after " << delay_ms << " ms: status " << status;
    expect_one_runs_outputs(out);
  }
}

// A folder another writer holds: a run says it waits, writes nothing while the lock is held,
// and writes once it is released.
TEST(OutputFilesTest, ARunWaitsForAnotherWriterOfItsFolder) {
  const TemporaryDirectory scratch("dtsim-locked");
  const fs::path out = scratch / "out";
  fs::create_directories(out);
  const int held = open(out.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);  // not inherited by dtsim
  ASSERT_EQ(flock(held, LOCK_EX), 0);
  int error_pipe = -1;
  const pid_t pid = start_dtsim({"run", kDefault, "-o", out.string()}, &error_pipe);
  std::string said;
  char byte = 0;
  while (said.find('\n') == std::string::npos && read(error_pipe, &byte, 1) == 1) said += byte;
  EXPECT_EQ(said, "dtsim: waiting for another dtsim writing into " + out.string() + "\n");
  EXPECT_FALSE(fs::exists(out / "timeline.json"));
  EXPECT_FALSE(fs::exists(out / "report.json"));
  close(held);  // releases the lock
  const int status = wait_for(pid);
  close(error_pipe);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  expect_one_runs_outputs(out);
}

TEST(OutputFilesTest, AFolderHeldTooLongIsRefusedWithOneMessage) {
  const TemporaryDirectory scratch("dtsim-held");
  const int held = open(scratch.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_EQ(flock(held, LOCK_EX), 0);
  try {
    scenarios::write_file_atomically(scratch / "x.txt", [](std::ostream& out) { out << "x"; }, 0.2);
    FAIL() << "expected OutputError";
  } catch (const scenarios::OutputError& error) {
    EXPECT_NE(std::string(error.what()).find("another dtsim has been writing into"), std::string::npos) << error.what();
  }
  close(held);
  EXPECT_TRUE(fs::is_empty(scratch.path()));
}

// A write that cannot start (the second file's folder does not exist) or whose writer throws
// while the first file's temporary exists leaves none of the files and no temporary; a
// directory where a file should go is refused.
TEST(OutputFilesTest, AFailedWriteLeavesNothing) {
  const TemporaryDirectory scratch("dtsim-failed");
  const auto write_x = [](std::ostream& out) { out << "x"; };
  EXPECT_THROW(scenarios::write_files_atomically({{scratch / "a.txt", write_x}, {scratch / "no" / "b.txt", write_x}}),
               scenarios::OutputError);
  EXPECT_TRUE(fs::is_empty(scratch.path()));
  EXPECT_THROW(scenarios::write_files_atomically(
                   {{scratch / "a.txt", write_x}, {scratch / "b.txt", [](std::ostream&) { throw std::runtime_error("x"); }}}),
               std::runtime_error);
  EXPECT_TRUE(fs::is_empty(scratch.path()));
  fs::create_directories(scratch / "a.txt");  // a directory where the file should go
  EXPECT_THROW(scenarios::write_files_atomically({{scratch / "a.txt", write_x}}), scenarios::OutputError);
  EXPECT_TRUE(fs::is_empty(scratch / "a.txt"));
}

}  // namespace
