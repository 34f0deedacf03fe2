/* libamber is a good guest: loading it (and the Swift runtime under it)
 * leaves the host's crash signals as they were. A handler the host installs
 * before anything is loaded (.preinit_array runs before every library's
 * initializers) stays; signals the host left alone keep their default, so a
 * crash in the host's own code (an abort) is the host's plain crash, with no
 * report printed by Swift. SWIFT_BACKTRACE set in the environment keeps Swift's
 * reporter, as its user asked. */
#define _GNU_SOURCE
#include <amber.h>

#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGQUIT};
enum { SIGNAL_COUNT = sizeof crash_signals / sizeof crash_signals[0] };

static void host_handler(int signal) { (void)signal; }

typedef void (*handler)(int);

static handler handler_of(int signal) {
    struct sigaction current;
    if (sigaction(signal, NULL, &current) != 0) return NULL;
    return current.sa_handler;  /* shares its storage with sa_sigaction: either kind compares by address */
}

/* The host's own SIGSEGV handler, installed before libamber is loaded. */
static void install_before_loading(void) {
    struct sigaction mine;
    memset(&mine, 0, sizeof mine);
    mine.sa_handler = host_handler;
    sigemptyset(&mine.sa_mask);
    sigaction(SIGSEGV, &mine, NULL);
}
__attribute__((section(".preinit_array"), used)) static void (*const preinit)(void) = install_before_loading;

/* Whether `function` is in a library whose file name starts with `prefix`. */
static int in_library(const char *(*function)(void), const char *prefix) {
    void *address = NULL;
    memcpy(&address, &function, sizeof address);  /* ISO C has no cast from function to object pointer */
    Dl_info info;
    if (address == NULL || dladdr(address, &info) == 0 || info.dli_fname == NULL) return 0;
    const char *name = strrchr(info.dli_fname, '/');
    return strncmp(name != NULL ? name + 1 : info.dli_fname, prefix, strlen(prefix)) == 0;
}

/* Runs this program again with SWIFT_BACKTRACE set; it reports whether Swift's handlers are in place. */
static int swift_handlers_with_backtrace_set(const char *self) {
    pid_t child = fork();
    if (child == 0) {
        setenv("SWIFT_BACKTRACE", "enable=yes", 1);
        execl(self, self, "--report-swift-handlers", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* An abort() in the host's code in a child (SIGABRT, a signal the host left
 * alone): it must die of it with nothing written to its standard error. */
static void check_a_host_crash_is_plain(void) {
    int pipe_ends[2];
    CHECK(pipe(pipe_ends) == 0);
    pid_t child = fork();
    if (child == 0) {
        dup2(pipe_ends[1], STDERR_FILENO);
        close(pipe_ends[0]);
        abort();
    }
    close(pipe_ends[1]);
    char output[256];
    ssize_t length = read(pipe_ends[0], output, sizeof output);
    close(pipe_ends[0]);
    int status = 0;
    waitpid(child, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    CHECK(length == 0);
    if (length > 0) fprintf(stderr, "the crash printed: %.*s\n", (int)length, output);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--report-swift-handlers") == 0) {
        int swift = 0;
        for (int i = 1; i < SIGNAL_COUNT; i++) swift += handler_of(crash_signals[i]) != SIG_DFL;
        return swift == SIGNAL_COUNT - 1 ? 0 : 1;
    }
    /* The library is loaded and working. */
    CHECK(strlen(amber_version()) > 0);
    CHECK(in_library(amber_version, "libAmberC") || in_library(amber_version, "libamber"));

    CHECK(handler_of(SIGSEGV) == host_handler);
    for (int i = 1; i < SIGNAL_COUNT; i++) {
        CHECK(handler_of(crash_signals[i]) == SIG_DFL);
        if (handler_of(crash_signals[i]) != SIG_DFL) fprintf(stderr, "signal %d was taken\n", crash_signals[i]);
    }
    /* Loading more (a plugin, which links the Swift runtime too) changes nothing either. */
    const char *directory = getenv("AMBER_PLUGIN_DIR");
    if (directory != NULL) {
        char path[1024];
        snprintf(path, sizeof path, "%s/libAmberColorPlugin.so", directory);
        amber_registry *registry = NULL;
        OK(amber_registry_new(&registry));
        OK(amber_registry_load_plugin(registry, path, NULL));
        OK(amber_registry_free(registry));
        CHECK(handler_of(SIGSEGV) == host_handler && handler_of(SIGABRT) == SIG_DFL);
    }
    /* Valgrind handles signals itself and reports crashes: the rest needs the real process. */
    const char *preload = getenv("LD_PRELOAD");
    if (preload == NULL || strstr(preload, "valgrind") == NULL) {
        CHECK(swift_handlers_with_backtrace_set("/proc/self/exe") == 0);
        check_a_host_crash_is_plain();
    }
    return report();
}
