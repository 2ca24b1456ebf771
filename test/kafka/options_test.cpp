// Option structs filled with designated initializers that name only some
// members: every member has a default initializer, so this compiles with
// -Wall -Wextra -Werror (no -Wmissing-field-initializers) and the members
// left out keep their documented defaults. No broker is needed.

#include <strata/changelog/file_log.hpp>
#include <strata/decorators/all.hpp>
#include <strata/kafka/admin.hpp>
#include <strata/kafka/changelog.hpp>
#include <strata/kafka/producer.hpp>
#include <strata/runtime/application_options.hpp>

#include <catch2/catch.hpp>

TEST_CASE("option structs take designated initializers for some members, the rest keep their defaults",
          "[options]") {
    const strata::kafka::changelog_options changelog{.bootstrap_servers = "127.0.0.1:9092", .topic = "t"};
    CHECK(changelog.partition == 0);
    CHECK(changelog.producer_settings.empty());
    CHECK(changelog.read_committed);

    const strata::kafka::producer_options producer{.bootstrap_servers = "127.0.0.1:9092"};
    CHECK_FALSE(producer.transactional_id.has_value());

    const strata::kafka::topic_options topic{.partitions = 6};
    CHECK(topic.bootstrap_servers.empty());
    CHECK(topic.replication_factor == 1);

    const strata::runtime::application_options app{.application_id = "a", .input_topics = {"in"}};
    CHECK(app.bootstrap_servers.empty());
    CHECK(app.instance_id.empty());

    const strata::logged_options logged{.partition = 3};
    CHECK_FALSE(logged.checkpoint.has_value());
    CHECK(logged.checkpoint_on_flush);

    const strata::cached_options cache{.max_bytes = 1024};
    const strata::metered_options metered{.time_one_in = 4};
    const strata::file_log_options file_log{.segment_bytes = 4096};
    CHECK(cache.max_bytes == 1024);
    CHECK(metered.time_one_in == 4);
    CHECK(file_log.segment_bytes == 4096);
}
