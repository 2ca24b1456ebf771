package io.strata.peer;

import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/** `--name value` options of one subcommand; every option read is checked off. */
final class Args {
    private final Map<String, String> values = new LinkedHashMap<>();
    private final Set<String> used = new HashSet<>();

    Args(String[] argv, int from) {
        for (int i = from; i < argv.length; i++) {
            String a = argv[i];
            if (!a.startsWith("--") || a.length() == 2) {
                throw new UsageException("expected an option --name, got '" + a + "'");
            }
            String name = a.substring(2);
            String value;
            int eq = name.indexOf('=');
            if (eq >= 0) {
                value = name.substring(eq + 1);
                name = name.substring(0, eq);
            } else if (i + 1 < argv.length && !argv[i + 1].startsWith("--")) {
                value = argv[++i];
            } else {
                value = "true"; // a flag
            }
            if (values.put(name, value) != null) {
                throw new UsageException("option --" + name + " given twice");
            }
        }
    }

    boolean has(String name) {
        used.add(name);
        return values.containsKey(name);
    }

    String str(String name) {
        used.add(name);
        String v = values.get(name);
        if (v == null) throw new UsageException("missing option --" + name);
        return v;
    }

    String str(String name, String dflt) {
        used.add(name);
        return values.getOrDefault(name, dflt);
    }

    long num(String name) {
        return parse(name, str(name));
    }

    long num(String name, long dflt) {
        return has(name) ? parse(name, values.get(name)) : dflt;
    }

    double real(String name, double dflt) {
        if (!has(name)) return dflt;
        try {
            return Double.parseDouble(values.get(name));
        } catch (NumberFormatException e) {
            throw new UsageException("--" + name + " wants a number, got '" + values.get(name) + "'");
        }
    }

    boolean flag(String name) {
        String v = str(name, "false");
        if (v.equals("true") || v.equals("1") || v.equals("yes")) return true;
        if (v.equals("false") || v.equals("0") || v.equals("no")) return false;
        throw new UsageException("--" + name + " wants true or false, got '" + v + "'");
    }

    String oneOf(String name, String dflt, String... allowed) {
        String v = dflt == null ? str(name) : str(name, dflt);
        for (String a : allowed) if (a.equals(v)) return v;
        throw new UsageException("--" + name + " must be one of " + String.join("|", allowed) + ", got '" + v + "'");
    }

    /** Fails on options that no code path read: a typo must not pass silently. */
    void checkAllUsed() {
        for (String name : values.keySet()) {
            if (!used.contains(name)) throw new UsageException("unknown option --" + name);
        }
    }

    private static long parse(String name, String v) {
        try {
            // 1M, 10k, 10MiB style suffixes keep command lines short.
            String s = v.trim();
            long mult = 1;
            String lower = s.toLowerCase();
            String[][] suffixes = {{"kib", "1024"}, {"mib", "1048576"}, {"gib", "1073741824"},
                                   {"k", "1000"}, {"m", "1000000"}, {"g", "1000000000"}};
            for (String[] suf : suffixes) {
                if (lower.endsWith(suf[0])) {
                    mult = Long.parseLong(suf[1]);
                    s = s.substring(0, s.length() - suf[0].length());
                    break;
                }
            }
            return Math.multiplyExact(Long.parseLong(s), mult);
        } catch (NumberFormatException | ArithmeticException e) {
            throw new UsageException("--" + name + " wants an integer (suffixes k, M, G, KiB, MiB, GiB), got '" + v + "'");
        }
    }

    static final class UsageException extends RuntimeException {
        UsageException(String msg) {
            super(msg);
        }
    }
}
