/* Loading libamber may load the Swift runtime, whose crash reporter installs
 * its handler for SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP and
 * SIGQUIT wherever the process still had the default. A library should not
 * change how its host crashes, so this constructor (run after the runtime's,
 * which libamber depends on) puts the default back for each of those signals
 * whose handler is in libswiftCore, but only when libamber brought the
 * runtime in: a runtime loaded before libamber (a Swift host, another Swift
 * library) set up its reporter for its own sake. Handlers the host installed
 * itself are never the runtime's, so they are untouched; so is everything
 * when SWIFT_BACKTRACE is set, since then the user asked for the reporter. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static int is_swift_runtime(const char *path) {
    const char *name = strrchr(path, '/');
    return strncmp(name != NULL ? name + 1 : path, "libswiftCore.", 13) == 0;
}

/* Where libamber and libswiftCore come in the load order (-1: not found). */
struct load_order {
    ElfW(Addr) self_base;
    int position, self, runtime;
};

static int visit(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct load_order *order = data;
    if (info->dlpi_addr == order->self_base && order->self < 0) order->self = order->position;
    if (info->dlpi_name != NULL && is_swift_runtime(info->dlpi_name) && order->runtime < 0) order->runtime = order->position;
    order->position++;
    return 0;
}

static int in_swift_runtime(void (*handler)(int)) {
    void *address = NULL;
    memcpy(&address, &handler, sizeof address);
    Dl_info info;
    return address != NULL && dladdr(address, &info) != 0 && info.dli_fname != NULL && is_swift_runtime(info.dli_fname);
}

__attribute__((constructor)) static void amber_restore_host_signals(void) {
    if (getenv("SWIFT_BACKTRACE") != NULL) return;
    Dl_info self;
    if (dladdr((void *)amber_restore_host_signals, &self) == 0) return;
    struct load_order order = {(ElfW(Addr))self.dli_fbase, 0, -1, -1};
    dl_iterate_phdr(visit, &order);
    if (order.self < 0 || order.runtime < order.self) return;  /* the runtime was there first, or is not there */
    static const int signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGQUIT};
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) {
        struct sigaction current;
        /* sa_handler shares its storage with sa_sigaction: either kind is found by address. */
        if (sigaction(signals[i], NULL, &current) != 0 || !in_swift_runtime(current.sa_handler)) continue;
        struct sigaction fallback;
        memset(&fallback, 0, sizeof fallback);
        fallback.sa_handler = SIG_DFL;
        sigemptyset(&fallback.sa_mask);
        sigaction(signals[i], &fallback, NULL);
    }
}
