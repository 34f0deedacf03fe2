/* Loading libamber loads the Swift runtime, whose crash reporter installs its
 * handler for SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP and SIGQUIT
 * wherever the process still had the default. A library should not change how
 * its host crashes, so this constructor (run after the runtime's, which
 * libamber depends on) puts the default back for each of those signals whose
 * handler is the runtime's. Handlers the host installed before loading
 * libamber are the runtime's to keep, and are untouched; so is everything when
 * SWIFT_BACKTRACE is set, since then the user asked for the reporter. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* Whether `address` is code of the Swift runtime: in libswiftCore, or in this
 * library when the runtime is linked into it statically. */
static int in_swift_runtime(void *address) {
    Dl_info handler, self;
    if (address == NULL || dladdr(address, &handler) == 0 || handler.dli_fname == NULL) return 0;
    if (dladdr((void *)in_swift_runtime, &self) != 0 && self.dli_fname != NULL && strcmp(handler.dli_fname, self.dli_fname) == 0)
        return 1;
    const char *name = strrchr(handler.dli_fname, '/');
    return strncmp(name != NULL ? name + 1 : handler.dli_fname, "libswiftCore.", 13) == 0;
}

__attribute__((constructor)) static void amber_restore_host_signals(void) {
    if (getenv("SWIFT_BACKTRACE") != NULL) return;
    static const int signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGQUIT};
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) {
        struct sigaction current;
        if (sigaction(signals[i], NULL, &current) != 0) continue;
        void *handler = (current.sa_flags & SA_SIGINFO) ? (void *)current.sa_sigaction : (void *)current.sa_handler;
        if (handler == (void *)SIG_DFL || handler == (void *)SIG_IGN || !in_swift_runtime(handler)) continue;
        struct sigaction fallback;
        memset(&fallback, 0, sizeof fallback);
        fallback.sa_handler = SIG_DFL;
        sigemptyset(&fallback.sa_mask);
        sigaction(signals[i], &fallback, NULL);
    }
}
