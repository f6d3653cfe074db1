// a planner that recognises an op by its name
inline bool is_linear(std::string_view t) { return t == "aten.linear.default"; }
