// The restore thread of an instance (include/strata/runtime/detail/restorer.hpp)
// alone, over real changelog topics: no group, no coordination, no processor.
// A task here is one hash-map store logged to a topic of its own; the test
// writes that topic itself and drives the restorer as an instance's
// processing thread would (add, add_standby, promote, cancel, take_ready,
// take_lost).

#include "../kafka/kafka_test_support.hpp"

#include <strata/decorators/all.hpp>
#include <strata/kafka/changelog.hpp>
#include <strata/runtime/detail/restorer.hpp>
#include <strata/stores/hash_map_store.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
namespace rt = strata::runtime;
namespace kafka = strata::kafka;

using kv = strata::hash_map_store<std::string, std::string>;
using logged_kv = decltype(std::declval<kv>() | strata::logged(std::declval<kafka::changelog&>()));

/// Writes records k<from>..k<to - 1> = v<i><suffix> to the topic's
/// partition; returns its end.
strata::offset_t write(const std::string& topic, int from, int to, const std::string& suffix = "",
                       std::int32_t partition = 0) {
    kafka::changelog log(kafka_test::log_options(topic, partition));
    auto s = kv("w") | strata::logged(log);
    for (int i = from; i < to; ++i) s.put("k" + std::to_string(i), "v" + std::to_string(i) + suffix);
    return s.flush();
}

/// A task of one logged store, over `topic`; its stores are built by the
/// restorer's build function (on the restore thread), as the factory's are.
class kv_task final : public rt::task {
public:
    /// @param reader the reader its changelog reads through (none: one of its own)
    /// @param log_partition the partition of `topic` it is logged to
    kv_task(std::int32_t partition, std::string topic, std::shared_ptr<kafka::changelog_reader> reader = {},
            std::int32_t log_partition = 0)
        : task(partition), topic_(std::move(topic)), reader_(std::move(reader)), log_partition_(log_partition) {}

    void build_stores() {
        kafka::changelog_options o = kafka_test::log_options(topic_, log_partition_);
        o.reader = reader_;
        log_.emplace(std::move(o));
        // Under the task's lock: the test reads store_ from its own thread.
        const std::lock_guard lock(mutex());
        store_.emplace(kv("kv") | strata::logged(*log_));
        stores_.push_back(std::make_unique<rt::detail::store_port_of<logged_kv>>(*store_));
        built_ = true;
    }

    /// The store's size and one value, read under the task's lock.
    std::size_t size() const {
        const std::lock_guard lock(mutex());
        return store_ ? store_->base().size() : 0;
    }
    std::optional<std::string> get(const std::string& k) const {
        const std::lock_guard lock(mutex());
        return store_->get(k);
    }

    void build(rt::task_context&) override {}
    void start() override {}
    void process(const rd_kafka_message_t&) override {}
    void resume_stream_time(std::int64_t) override {}
    bool punctuate(std::chrono::steady_clock::time_point) override { return false; }

private:
    std::string topic_;
    std::shared_ptr<kafka::changelog_reader> reader_;
    std::int32_t log_partition_;
    std::optional<kafka::changelog> log_;
    std::optional<logged_kv> store_;
};

/// A restorer as an instance makes it, with hooks the cases look at.
struct harness {
    explicit harness(std::size_t batch = 500, std::function<void(rt::task&)> prepare = {},
                     std::chrono::milliseconds tail_interval = 50ms)
        : restore(
              [](rt::task& t) { static_cast<kv_task&>(t).build_stores(); },
              [this, prepare = std::move(prepare)](std::span<rt::task* const> tasks) {
                  {
                      const std::lock_guard lock(batches_mutex);
                      batches.push_back(tasks.size());
                  }
                  for (rt::task* t : tasks) {
                      ++prepared;
                      if (prepare) prepare(*t);
                  }
              },
              registry, [this](const rt::restore_event& e) { events.fetch_add(1); (void)e; }, batch, tail_interval) {}

    /// The tasks handed over within `within` (at least one, or none by then).
    std::vector<std::shared_ptr<rt::task>> ready(std::chrono::milliseconds within = 60s) {
        const auto until = std::chrono::steady_clock::now() + within;
        for (;;) {
            if (auto f = restore.failure()) std::rethrow_exception(f);
            auto got = restore.take_ready();
            if (!got.empty() || std::chrono::steady_clock::now() >= until) return got;
            std::this_thread::sleep_for(10ms);
        }
    }

    /// The sizes of the batches prepared, in turn.
    std::vector<std::size_t> prepared_batches() const {
        const std::lock_guard lock(batches_mutex);
        return batches;
    }

    strata::metrics::registry registry;
    mutable std::mutex batches_mutex;
    std::vector<std::size_t> batches;
    std::atomic<int> prepared{0};
    std::atomic<int> events{0};
    rt::detail::restorer restore;
};

/// Stops (or starts again) the fetching of one partition by a reader.
void pause_fetching(rd_kafka_t* rk, const std::string& topic, std::int32_t partition, bool pause) {
    const kafka::unique_partition_list l = kafka::one_partition(topic, partition, RD_KAFKA_OFFSET_INVALID);
    REQUIRE((pause ? rd_kafka_pause_partitions(rk, l.get()) : rd_kafka_resume_partitions(rk, l.get())) ==
            RD_KAFKA_RESP_ERR_NO_ERROR);
}

/// Waits until `done` holds, for up to 60 s.
template <class F>
bool eventually(F done) {
    const auto until = std::chrono::steady_clock::now() + 60s;
    while (!done()) {
        if (std::chrono::steady_clock::now() >= until) return false;
        std::this_thread::sleep_for(20ms);
    }
    return true;
}

}  // namespace

TEST_CASE("restorer: an active task is handed over holding its whole changelog, up to the end read after prepare",
          "[runtime][restorer]") {
    const std::string topic = kafka_test::make_topic("restorer-active");
    write(topic, 0, 3'000);
    // What the previous owner commits while the new one looks up its
    // offsets is in the restore (runtime-design I3): the end is read after
    // prepare returns.
    harness h(500, [&](rt::task&) { write(topic, 3'000, 3'100, "-late"); });
    auto t = std::make_shared<kv_task>(0, topic);
    h.restore.add(t);
    const auto got = h.ready();
    REQUIRE(got.size() == 1);
    REQUIRE(got.front() == t);
    CHECK(h.prepared == 1);
    CHECK(t->size() == 3'100);
    CHECK(t->get("k0") == "v0");
    CHECK(t->get("k3099") == "v3099-late");
    CHECK(t->restore_done() == 3'100);
    CHECK(t->restore_total() == 3'100);
    CHECK(t->timeline.records_restored == 3'100);
    CHECK(h.events >= 3);  // start, batches, end
    CHECK(h.restore.take_lost().empty());
}

TEST_CASE("restorer: a standby follows its changelog and is never handed over until promoted",
          "[runtime][restorer]") {
    const std::string topic = kafka_test::make_topic("restorer-standby");
    write(topic, 0, 1'000);
    harness h;
    auto t = std::make_shared<kv_task>(0, topic);
    h.restore.add_standby(t);
    REQUIRE(eventually([&] { return t->size() == 1'000 && t->standby_lag() == 0; }));
    write(topic, 1'000, 1'500);
    REQUIRE(eventually([&] { return t->size() == 1'500 && t->standby_lag() == 0; }));
    CHECK(h.prepared == 0);  // a standby needs no committed offsets
    CHECK(h.restore.take_ready().empty());

    // Promoted: it restores what it is behind (written after its last look)
    // and is handed over with it.
    write(topic, 1'500, 1'600, "-last");
    REQUIRE(h.restore.promote(*t));
    const auto got = h.ready();
    REQUIRE(got.size() == 1);
    REQUIRE(got.front() == t);
    CHECK(h.prepared == 1);
    CHECK(t->size() == 1'600);
    CHECK(t->get("k1599") == "v1599-last");
}

TEST_CASE("restorer: a cancelled restore is let go of at once and never handed over", "[runtime][restorer]") {
    const std::string topic = kafka_test::make_topic("restorer-cancel");
    write(topic, 0, 100'000);
    harness h(10);  // ten records a batch: the restore is long
    auto t = std::make_shared<kv_task>(0, topic);
    h.restore.add(t);
    REQUIRE(eventually([&] { return t->restore_done() > 0; }));
    h.restore.cancel(*t);
    // Once cancel returned the restore thread no longer touches the task.
    const std::size_t held = t->size();
    std::this_thread::sleep_for(300ms);
    CHECK(t->size() == held);
    CHECK(held < 100'000);
    CHECK(h.ready(1s).empty());

    // The restorer goes on with other tasks.
    const std::string other = kafka_test::make_topic("restorer-cancel-other");
    write(other, 0, 10);
    auto u = std::make_shared<kv_task>(1, other);
    h.restore.add(u);
    const auto got = h.ready();
    REQUIRE(got.size() == 1);
    CHECK(got.front() == u);
    CHECK(u->size() == 10);
}

TEST_CASE("restorer: a standby whose changelog lost records it had not read is reported lost, and not promoted",
          "[runtime][restorer]") {
    const std::string topic = kafka_test::make_topic("restorer-lost");
    write(topic, 0, 100);
    harness h(500, {}, 5s);  // caught up, it looks again after 5 s
    auto reader = std::make_shared<kafka::changelog_reader>(kafka_test::log_options(topic));
    auto t = std::make_shared<kv_task>(0, topic, reader);
    h.restore.add_standby(t);
    REQUIRE(eventually([&] { return t->size() == 100 && t->standby_lag() == 0; }));

    // A standby follows its changelog: its reader fetches as records come.
    // Its fetching held (as a reader busy elsewhere might be), records
    // 100..199 are written and deleted before it fetches them: its copy can
    // no longer be brought up to date.
    pause_fetching(reader->get(), topic, 0, true);
    const strata::offset_t end = write(topic, 100, 200);
    kafka_test::delete_records_before(topic, 0, end - 10);
    pause_fetching(reader->get(), topic, 0, false);
    std::vector<rt::detail::restorer::lost_standby> lost;
    REQUIRE(eventually([&] {
        auto more = h.restore.take_lost();
        lost.insert(lost.end(), more.begin(), more.end());
        return !lost.empty();
    }));
    REQUIRE(lost.size() == 1);
    CHECK(lost.front().t == t);
    CHECK_THAT(lost.front().why, Catch::Contains("records it had not read were deleted"));
    CHECK(t->standby_lag() == -1);  // counted as no copy
    CHECK_FALSE(h.restore.promote(*t));
    h.restore.cancel(*t);
    CHECK(h.ready(500ms).empty());
}

TEST_CASE("restorer: tasks that wait together are prepared in one call, and one cancelled meanwhile is never "
          "handed over",
          "[runtime][restorer]") {
    // More tasks than the restorer opens replays for at once (64), one
    // store each, over one reader as an instance's are.
    constexpr int n = 80;
    const std::string topic = kafka_test::make_topic("restorer-batch", n);
    for (int p = 0; p < n; ++p) write(topic, 0, 3 + p % 4, "-p" + std::to_string(p), p);
    auto reader = std::make_shared<kafka::changelog_reader>(kafka_test::log_options(topic));

    // The first prepare of each of the first two batches waits for the test.
    std::atomic<int> calls{0};
    std::atomic<bool> go_first{false}, go_second{false};
    harness h(500, [&](rt::task&) {
        const int call = ++calls;
        std::atomic<bool>& go = call == 1 ? go_first : go_second;
        if (call <= 2)
            while (!go) std::this_thread::sleep_for(5ms);
    });
    std::vector<std::shared_ptr<kv_task>> tasks;
    for (int p = 0; p < n; ++p) tasks.push_back(std::make_shared<kv_task>(p, topic, reader, p));

    h.restore.add(tasks[0]);
    REQUIRE(eventually([&] { return calls == 1; }));
    for (int p = 1; p < n; ++p) h.restore.add(tasks[p]);  // wait while the first is prepared
    go_first = true;
    REQUIRE(eventually([&] { return calls == 2; }));  // the other 79, in one batch

    // A task of a batch being prepared: cancel waits until the restore
    // thread lets go of it.
    std::atomic<bool> cancelled{false};
    std::thread canceller([&] {
        h.restore.cancel(*tasks[50]);
        cancelled = true;
    });
    std::this_thread::sleep_for(200ms);
    CHECK_FALSE(cancelled);
    go_second = true;
    canceller.join();
    // And one among the last, probably built and waiting for replays to open.
    h.restore.cancel(*tasks[79]);

    std::vector<std::shared_ptr<rt::task>> got;
    REQUIRE(eventually([&] {
        auto more = h.restore.take_ready();
        got.insert(got.end(), more.begin(), more.end());
        if (auto f = h.restore.failure()) std::rethrow_exception(f);
        return got.size() >= n - 2;
    }));
    CHECK(h.ready(300ms).empty());
    CHECK(got.size() == n - 2);
    CHECK(h.prepared_batches() == std::vector<std::size_t>{1, n - 1});
    for (int p = 0; p < n; ++p) {
        const bool handed = std::find(got.begin(), got.end(), tasks[p]) != got.end();
        if (p == 50 || p == 79) {
            CHECK_FALSE(handed);
            continue;
        }
        CHECK(handed);
        CHECK(tasks[p]->size() == static_cast<std::size_t>(3 + p % 4));
        CHECK(tasks[p]->get("k0") == "v0-p" + std::to_string(p));
    }
    CHECK(tasks[50]->size() == 0);  // built, never restored
}

TEST_CASE("restorer: standbys promoted together are prepared in one call and handed over with what they were behind",
          "[runtime][restorer]") {
    constexpr int n = 5;
    const std::string topic = kafka_test::make_topic("restorer-promote-batch", n + 1);
    for (int p = 0; p < n; ++p) write(topic, 0, 100, "", p);
    auto reader = std::make_shared<kafka::changelog_reader>(kafka_test::log_options(topic));

    // The first prepare (an active task's, partition n) waits for the test,
    // which promotes every standby meanwhile.
    std::atomic<int> calls{0};
    std::atomic<bool> go{false};
    harness h(500, [&](rt::task&) {
        if (++calls == 1)
            while (!go) std::this_thread::sleep_for(5ms);
    });
    std::vector<std::shared_ptr<kv_task>> standbys;
    for (int p = 0; p < n; ++p) {
        standbys.push_back(std::make_shared<kv_task>(p, topic, reader, p));
        h.restore.add_standby(standbys.back());
    }
    REQUIRE(eventually([&] {
        return std::all_of(standbys.begin(), standbys.end(),
                           [](const auto& t) { return t->size() == 100 && t->standby_lag() == 0; });
    }));
    CHECK(h.prepared == 0);

    auto active = std::make_shared<kv_task>(n, topic, reader, n);
    h.restore.add(active);
    REQUIRE(eventually([&] { return calls == 1; }));
    for (int p = 0; p < n; ++p) write(topic, 100, 110, "-last", p);  // behind by ten each
    for (const auto& t : standbys) REQUIRE(h.restore.promote(*t));
    go = true;

    std::vector<std::shared_ptr<rt::task>> got;
    REQUIRE(eventually([&] {
        auto more = h.restore.take_ready();
        got.insert(got.end(), more.begin(), more.end());
        if (auto f = h.restore.failure()) std::rethrow_exception(f);
        return got.size() >= n + 1;
    }));
    CHECK(got.size() == n + 1);
    CHECK(h.prepared_batches() == std::vector<std::size_t>{1, n});
    for (const auto& t : standbys) {
        CHECK(std::find(got.begin(), got.end(), t) != got.end());
        CHECK(t->size() == 110);
        CHECK(t->get("k109") == "v109-last");
    }
}
