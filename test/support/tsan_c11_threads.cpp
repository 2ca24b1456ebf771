// Linked into every test program of a ThreadSanitizer build
// (-DSTRATA_SANITIZE=thread). librdkafka runs its threads, mutexes and
// condition variables through C11 <threads.h>, which glibc implements on its
// pthread internals without passing the entry points the sanitizer
// intercepts: the sanitizer would not know librdkafka's threads (and crash in
// its allocator on their first malloc) nor see any lock they take (and report
// every handoff between them and strata as a race). The definitions below,
// in the executable, take precedence over glibc's and go through pthread.
#include <pthread.h>
#include <threads.h>
#include <cstdint>
#include <new>
#include <cerrno>

namespace {
struct start {
    thrd_start_t fn;
    void* arg;
};
void* trampoline(void* p) {
    const start s = *static_cast<start*>(p);
    delete static_cast<start*>(p);
    return reinterpret_cast<void*>(static_cast<std::intptr_t>(s.fn(s.arg)));
}
}  // namespace

extern "C" int thrd_create(thrd_t* thr, thrd_start_t fn, void* arg) {
    auto* s = new (std::nothrow) start{fn, arg};
    if (s == nullptr) return thrd_nomem;
    pthread_t t;
    if (pthread_create(&t, nullptr, &trampoline, s) != 0) {
        delete s;
        return thrd_error;
    }
    *thr = t;
    return thrd_success;
}

// Joined and detached through pthread too, so the sanitizer sees them end.
extern "C" int thrd_join(thrd_t t, int* res) {
    void* r = nullptr;
    if (pthread_join(t, &r) != 0) return thrd_error;
    if (res != nullptr) *res = static_cast<int>(reinterpret_cast<std::intptr_t>(r));
    return thrd_success;
}

extern "C" int thrd_detach(thrd_t t) { return pthread_detach(t) == 0 ? thrd_success : thrd_error; }

// C11 mutexes and condition variables: glibc implements them on its pthread
// internals without going through the intercepted entry points, so the
// sanitizer would miss every lock librdkafka takes. glibc's mtx_t and cnd_t
// have the layout of pthread_mutex_t and pthread_cond_t.
static_assert(sizeof(mtx_t) == sizeof(pthread_mutex_t), "glibc's mtx_t is a pthread_mutex_t");
static_assert(sizeof(cnd_t) == sizeof(pthread_cond_t), "glibc's cnd_t is a pthread_cond_t");
namespace {
pthread_mutex_t* pm(mtx_t* m) { return reinterpret_cast<pthread_mutex_t*>(m); }
pthread_cond_t* pc(cnd_t* c) { return reinterpret_cast<pthread_cond_t*>(c); }
int result(int e) { return e == 0 ? thrd_success : e == ETIMEDOUT ? thrd_timedout : e == EBUSY ? thrd_busy : thrd_error; }
}  // namespace

extern "C" int mtx_init(mtx_t* m, int type) {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    if (type & mtx_recursive) pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    const int e = pthread_mutex_init(pm(m), &a);
    pthread_mutexattr_destroy(&a);
    return result(e);
}
extern "C" int mtx_lock(mtx_t* m) { return result(pthread_mutex_lock(pm(m))); }
extern "C" int mtx_trylock(mtx_t* m) { return result(pthread_mutex_trylock(pm(m))); }
extern "C" int mtx_timedlock(mtx_t* __restrict m, const struct timespec* __restrict t) {
    return result(pthread_mutex_timedlock(pm(m), t));
}
extern "C" int mtx_unlock(mtx_t* m) { return result(pthread_mutex_unlock(pm(m))); }
extern "C" void mtx_destroy(mtx_t* m) { pthread_mutex_destroy(pm(m)); }
extern "C" int cnd_init(cnd_t* c) { return result(pthread_cond_init(pc(c), nullptr)); }
extern "C" int cnd_signal(cnd_t* c) { return result(pthread_cond_signal(pc(c))); }
extern "C" int cnd_broadcast(cnd_t* c) { return result(pthread_cond_broadcast(pc(c))); }
extern "C" int cnd_wait(cnd_t* c, mtx_t* m) { return result(pthread_cond_wait(pc(c), pm(m))); }
extern "C" int cnd_timedwait(cnd_t* __restrict c, mtx_t* __restrict m, const struct timespec* __restrict t) {
    return result(pthread_cond_timedwait(pc(c), pm(m), t));
}
extern "C" void cnd_destroy(cnd_t* c) { pthread_cond_destroy(pc(c)); }
