package io.strata.peer;

import java.util.LinkedHashMap;
import java.util.Map;

/** One flat JSON object, keys in insertion order: the result line. */
final class Json {
    private final Map<String, Object> fields = new LinkedHashMap<>();

    Json put(String key, Object value) {
        fields.put(key, value);
        return this;
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("{");
        boolean first = true;
        for (Map.Entry<String, Object> e : fields.entrySet()) {
            if (!first) sb.append(',');
            first = false;
            quote(sb, e.getKey());
            sb.append(':');
            Object v = e.getValue();
            if (v == null) {
                sb.append("null");
            } else if (v instanceof Double || v instanceof Float) {
                double d = ((Number) v).doubleValue();
                if (Double.isFinite(d)) {
                    sb.append(String.format(java.util.Locale.ROOT, "%.6g", d).replaceAll("(\\.\\d*?)0+($|e)", "$1$2").replace(".e", "e").replaceAll("\\.$", ""));
                } else {
                    sb.append("null");
                }
            } else if (v instanceof Number || v instanceof Boolean) {
                sb.append(v);
            } else {
                quote(sb, v.toString());
            }
        }
        return sb.append('}').toString();
    }

    private static void quote(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\t' -> sb.append("\\t");
                case '\r' -> sb.append("\\r");
                default -> {
                    if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
                    else sb.append(c);
                }
            }
        }
        sb.append('"');
    }
}
