# Sourced by the collectors (collect-sweep.sh, collect-quality.sh): fields of a run's summary.json,
# which `pix2pix train` writes one key a line.

# summary_value KEY FILE: a number's or a string's value, its quotes dropped; "" when the key is
# absent. A value holding a comma or a quote is not read (the stop reason: summary_stopped_by).
summary_value() { sed -n "s/^ *\"$1\": *\"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}$/\1/p" "$2" | head -1; }

# summary_stopped_by FILE: early-stop, max-epochs or other, from the stop reason's start.
summary_stopped_by() {
  case "$(sed -n 's/^ *"stop_reason": *"//p' "$1" | head -1)" in
    "early stopping"*) echo early-stop ;;
    "reached --max-epochs"*) echo max-epochs ;;
    *) echo other ;;
  esac
}
