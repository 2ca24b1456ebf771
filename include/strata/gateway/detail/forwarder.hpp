#pragma once
/// @file
/// @brief How the gateway forwards a request it cannot answer here: to the
/// partition's owner, or with `allow_standby` also to the instances that
/// keep a standby of it, in turn; the next copy asked when one fails, or
/// (`hedge_after`) when one is slow while it still may answer. Not tied to
/// an application type: gateway.hpp builds the chain of targets from the
/// application's metadata and hands it over here.

#include <strata/gateway/http.hpp>
#include <strata/metrics/registry.hpp>
#include <strata/runtime/queries.hpp>

#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace strata::gateway::detail {

/// A forwarded request on its way: the instances to try in turn, and
/// what the tried ones did. Answers come on the client's threads, and
/// with hedging two may be out at once: `m` guards the rest.
struct forward_chain {
    runtime::query_outcome local;
    std::string path;
    http::header_list headers;
    bool parse = true;
    bool allow_standby = false;
    std::vector<std::pair<std::string, std::string>> targets;  // (instance, endpoint)
    std::function<void(answer)> done;

    std::mutex m;
    std::size_t next = 0;         // the next target to ask
    std::size_t outstanding = 0;  // asked, not answered yet
    bool settled = false;         // done was called
    std::string tried, failure;
};

/// Sends forward_chains on their way over a bounded pool of keep-alive
/// connections per instance, and counts what it did.
class forwarder {
public:
    /// @throws usage_error a TLS file that cannot be used
    forwarder(std::chrono::milliseconds timeout, std::optional<http::client_tls_options> tls,
              std::chrono::milliseconds hedge_after, metrics::counter& forwarded, metrics::counter& hedged,
              metrics::counter& failed)
        : clients_(timeout, 32, std::move(tls)), hedge_after_(hedge_after), forwarded_(&forwarded), hedged_(&hedged),
          forward_failed_(&failed) {}

    /// @brief Asks the chain's first target; its `done` gets the first
    /// answer that settles it, or 503 owner_unreachable naming what was tried.
    void start(std::shared_ptr<forward_chain> c) { next(std::move(c)); }

private:
    /// Asks the next target, if any is left and nothing settled yet; with
    /// none left and none out, answers 503.
    void next(std::shared_ptr<forward_chain> c) {
        std::unique_lock lock(c->m);
        if (c->settled) return;
        while (c->next < c->targets.size() && c->targets[c->next].second.empty()) {
            c->tried += (c->tried.empty() ? "" : ", ") + c->targets[c->next].first + " (no endpoint)";
            ++c->next;
        }
        if (c->next == c->targets.size()) {
            if (c->outstanding > 0) return;  // one asked earlier may still answer
            c->settled = true;
            answer a = error_answer(503, "owner_unreachable",
                                    "no instance that holds partition " + std::to_string(c->local.partition) +
                                        " answered (tried " + c->tried + "): " + c->failure,
                                    true);
            a.body["partition"] = c->local.partition;
            a.body["owner"] = c->local.owner;
            a.body["owner_endpoint"] = c->local.owner_endpoint;
            lock.unlock();
            c->done(std::move(a));
            return;
        }
        const auto [instance, endpoint] = c->targets[c->next++];
        ++c->outstanding;
        const std::size_t asked = c->next;
        const bool hedge = c->next < c->targets.size() && hedge_after_.count() > 0;
        lock.unlock();
        forwarded_->inc();
        if (hedge) {
            // Asks the next copy too unless an answer or a failure moved
            // the chain on meanwhile.
            auto timer = std::make_shared<boost::asio::steady_timer>(clients_.executor(), hedge_after_);
            timer->async_wait([this, c, timer, asked](boost::system::error_code ec) {
                if (ec) return;
                {
                    const std::lock_guard l(c->m);
                    if (c->settled || c->next != asked) return;
                }
                hedged_->inc();
                next(c);
            });
        }
        clients_.async_get(endpoint, c->path, c->headers, c->parse,
                           [this, c, instance = instance, endpoint = endpoint](forwarded f) mutable {
                               std::unique_lock l(c->m);
                               if (c->settled) return;
                               --c->outstanding;
                               if (settles(f, instance, *c)) {
                                   c->settled = true;
                                   l.unlock();
                                   return c->done(std::move(*f.reply));
                               }
                               forward_failed_->inc();
                               c->tried += (c->tried.empty() ? "" : ", ") + instance + " at " + endpoint;
                               c->failure = !f.reply ? f.failure
                                            : f.reply->parsed().is_object() ? f.reply->body.value("status", "error")
                                                                           : "error";
                               l.unlock();
                               next(std::move(c));
                           });
    }

    /// Whether a forwarded reply is the answer, or the next instance is asked.
    static bool settles(forwarded& f, const std::string& instance, const forward_chain& c) {
        if (!f.reply) return false;
        if (f.reply->code < 500) return true;
        // The holder read it and cannot render it: every copy holds the same.
        if (f.reply->code == 500 && f.reply->parsed().is_object() && f.reply->body.value("status", "") == "unrenderable")
            return true;
        return instance == c.local.owner && !c.allow_standby;
    }

    client_pool clients_;
    std::chrono::milliseconds hedge_after_;
    metrics::counter* forwarded_;
    metrics::counter* hedged_;
    metrics::counter* forward_failed_;
};

}  // namespace strata::gateway::detail
