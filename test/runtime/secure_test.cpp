// The changelog and the runtime against the broker's SASL_SSL listener
// (SCRAM-SHA-256 over TLS, scripts/kafka-broker.sh): they work with the right
// settings, and a wrong password or a broker certificate no trusted CA signed
// is a clear error at once, not a hang until a timeout.

#include "runtime_test_support.hpp"

#include "support/temp_dir.hpp"

#include <strata/decorators/all.hpp>
#include <strata/kafka/admin.hpp>
#include <strata/kafka/changelog.hpp>
#include <strata/runtime/application.hpp>
#include <strata/stores/hash_map_store.hpp>

#include <chrono>
#include <string>

using namespace runtime_test;
namespace rt = strata::runtime;
namespace k = strata::kafka;

namespace {

std::string secure_bootstrap() {
    return kafka_test::required_env("STRATA_KAFKA_SECURE_BOOTSTRAP",
                                    "start the broker with scripts/kafka-broker.sh (it opens a SASL_SSL listener) and "
                                    "eval its `env`");
}

/// The listener's security settings; `password` and `ca` replace the right ones.
k::settings secure(const std::string& password = "", const std::string& ca = "") {
    return {{"security.protocol", "SASL_SSL"},
            {"sasl.mechanisms", "SCRAM-SHA-256"},
            {"sasl.username", kafka_test::required_env("STRATA_KAFKA_SCRAM_USER", "eval the broker script's env")},
            {"sasl.password",
             password.empty() ? kafka_test::required_env("STRATA_KAFKA_SCRAM_PASSWORD", "eval the broker script's env")
                              : password},
            {"ssl.ca.location",
             ca.empty() ? kafka_test::required_env("STRATA_KAFKA_SECURE_CA", "eval the broker script's env") : ca}};
}

std::string other_ca() {
    return kafka_test::required_env("STRATA_KAFKA_CERTS_DIR", "eval the broker script's env") + "/other-ca.pem";
}

k::changelog_options secure_log(const std::string& topic, k::settings s) {
    k::changelog_options o;
    o.bootstrap_servers = secure_bootstrap();
    o.topic = topic;
    o.client_settings = std::move(s);
    o.connect_timeout = std::chrono::seconds(20);
    return o;
}

using kv = strata::hash_map_store<std::string, std::int64_t>;

/// How long `f` took to throw a kafka::error, and the error; fails if it did not throw.
template <class F>
std::pair<std::chrono::milliseconds, k::error> time_to_fail(F f) {
    const auto start = std::chrono::steady_clock::now();
    try {
        f();
    } catch (const k::error& e) {
        return {std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start), e};
    }
    FAIL("no error");
    throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("kafka over SASL_SSL: a changelog writes and restores through the secure listener", "[kafka][security]") {
    const std::string topic = kafka_test::make_topic("secure-log");
    {
        k::changelog log(secure_log(topic, secure()));
        auto s = kv("totals") | strata::logged(log);
        for (int i = 0; i < 500; ++i) s.put("k" + std::to_string(i % 50), i);
        REQUIRE(s.flush() == 500);
    }
    k::changelog log(secure_log(topic, secure()));
    auto fresh = kv("totals") | strata::logged(log);
    const auto p = fresh.restore();
    CHECK(p.records_done == 500);
    CHECK(fresh.base().size() == 50);
    CHECK(fresh.get("k49") == 499);
}

TEST_CASE("kafka over SASL_SSL: a wrong password, or a broker certificate no trusted CA signed, is a clear error at "
          "once",
          "[kafka][security]") {
    const std::string topic = kafka_test::make_topic("secure-refused");
    const auto [wrong_took, wrong] = time_to_fail([&] { k::changelog log(secure_log(topic, secure("guess"))); });
    CHECK(wrong.code() == RD_KAFKA_RESP_ERR__AUTHENTICATION);
    CHECK_THAT(std::string(wrong.what()), Catch::Contains("SASL authentication") && Catch::Contains("sasl.password"));
    CHECK(wrong_took < std::chrono::seconds(10));  // not the 20 s connect timeout

    const auto [ca_took, untrusted] =
        time_to_fail([&] { k::changelog log(secure_log(topic, secure("", other_ca()))); });
    CHECK(untrusted.code() == RD_KAFKA_RESP_ERR__SSL);
    CHECK_THAT(std::string(untrusted.what()), Catch::Contains("certificate verify failed") &&
                                                  Catch::Contains("ssl.ca.location"));
    CHECK(ca_took < std::chrono::seconds(10));
}

TEST_CASE("runtime over SASL_SSL: an application processes and commits through the secure listener, and with a wrong "
          "password run() stops at once with the reason",
          "[kafka][runtime][security]") {
    test_support::temp_dir dir;
    constexpr std::int32_t partitions = 2;
    const std::string app_id = kafka_test::unique_name("secure-app");
    const std::string input = kafka_test::make_topic("secure-in", partitions, {{"cleanup.policy", "delete"}});
    const auto config = [&](const std::string& password) {
        rt::application_options c;
        c.application_id = app_id;
        c.bootstrap_servers = secure_bootstrap();
        c.client_settings = secure(password);
        c.input_topics = {input};
        c.state_dir = dir / "state";
        c.instance_id = "a";
        c.commit_interval = std::chrono::milliseconds(200);
        c.session_timeout = std::chrono::milliseconds(6000);
        c.broker_timeout = std::chrono::seconds(30);
        return c;
    };
    const auto make = [&](const std::string& password) {
        return rt::make_application<std::string, std::int64_t>(
            config(password), [](rt::task_context& t) { return kv("totals") | t.logged() | strata::cached(); },
            [](auto& ctx, const auto& r) {
                auto& s = ctx.stores();
                s.put(r.key, s.get(r.key).value_or(0) + r.value.value_or(0));
            });
    };

    {
        auto refused = make("guess");
        running run(refused);
        const std::exception_ptr failure = run.failure(std::chrono::seconds(15));
        REQUIRE(failure != nullptr);
        try {
            std::rethrow_exception(failure);
        } catch (const k::error& e) {
            CHECK(e.code() == RD_KAFKA_RESP_ERR__AUTHENTICATION);
            CHECK_THAT(std::string(e.what()), Catch::Contains(secure_bootstrap()));
        }
    }

    input_writer w(input, partitions);
    for (std::int64_t i = 0; i < 300; ++i) w.write(i, 20);
    w.flush();
    auto app = make("");
    running run(app);
    REQUIRE(await_committed(app_id, input, w.written(), std::chrono::seconds(60)));
    std::int64_t total = 0;
    for (const auto& part : w.written())
        for (const auto& in : part) total += in.amount;
    std::int64_t seen = 0;
    for (int key = 0; key < 20; ++key) {
        const auto r = app.get<0>(key_of(key, 20));
        REQUIRE(r.ok());
        seen += r.value->value_or(0);
    }
    CHECK(seen == total);
    run.stop();
}
