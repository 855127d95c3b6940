#pragma once
// A Module owns computations; a Computation owns instructions in SSA (definition) order.

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/instruction.h"

namespace podsim::ir {

class Module;

class Computation {
 public:
  Computation(std::string name, Module* parent) : name_(std::move(name)), parent_(parent) {}

  const std::string& name() const { return name_; }
  Module* parent() const { return parent_; }

  // Appends an instruction (its operands must already be in this computation); names it
  // uniquely if its name is empty or taken; returns it. The last added becomes the root
  // unless set_root was called.
  Instruction* Add(std::unique_ptr<Instruction> instr);
  // Appends an instruction whose name the module has already reserved (Module::UniqueName).
  Instruction* AppendNamed(std::unique_ptr<Instruction> instr);
  // As Add, but placed right after `after` (an instruction of this computation) instead of
  // last; the root does not change.
  Instruction* InsertAfter(const Instruction* after, std::unique_ptr<Instruction> instr);

  const std::vector<std::unique_ptr<Instruction>>& instructions() const { return instructions_; }
  Instruction* root() const;
  void set_root(Instruction* root) { root_ = root; }
  // Parameters ordered by parameter_number.
  std::vector<Instruction*> parameters() const;
  // Drops the instructions the root does not depend on, except parameters.
  void RemoveDeadInstructions();

 private:
  std::string name_;
  Module* parent_;
  std::vector<std::unique_ptr<Instruction>> instructions_;
  Instruction* root_ = nullptr;
};

// A donated entry parameter: the entry root's tuple element `output` is written into parameter
// `parameter`'s buffer (XLA's input_output_alias; a training step's updated weights overwrite
// the weights). The memory model frees the parameter after its last read instead of keeping it
// to the end, and counts the output in its place.
struct OutputAlias {
  int64_t output = 0;     // index in the entry root's tuple
  int64_t parameter = 0;  // entry parameter number
  bool operator==(const OutputAlias&) const = default;
};

class Module {
 public:
  explicit Module(std::string name = "module") : name_(std::move(name)) {}
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }

  // Adds a computation; the first one added with is_entry=true is the entry.
  Computation* AddComputation(const std::string& name, bool is_entry = false);
  Computation* entry() const { return entry_; }
  Computation* FindComputation(const std::string& name) const;
  // Sub-computations before the entry, in the order they were added.
  const std::vector<std::unique_ptr<Computation>>& computations() const { return computations_; }

  // A unique instruction name from a stem ("add" -> "add", "add.1", ...).
  std::string UniqueName(const std::string& stem);
  // Marks a name used (so UniqueName avoids it); returns false if it was already used.
  bool ReserveName(const std::string& name);

  // Reorders the computations so that each comes after those its loops call, the entry last
  // (the order the text format prints them in); otherwise keeps their order.
  void OrderComputations();

  // Removes what the entry's root does not depend on: unused instructions of every computation
  // (parameters stay, so signatures do not change) and computations no reachable loop calls.
  void RemoveDeadCode();

  // Donated parameters, in output order (the verifier checks shapes and uniqueness).
  const std::vector<OutputAlias>& output_aliases() const { return output_aliases_; }
  void set_output_aliases(std::vector<OutputAlias> a) { output_aliases_ = std::move(a); }

  // Deep copy.
  std::unique_ptr<Module> Clone() const;
  // A copy of `c` (a computation of another module, with the computations its instructions
  // call) added to this one, under unique names; instructions keep their names where free.
  Computation* CopyComputation(const Computation& c);
  int64_t InstructionCount() const;

 private:
  std::string name_;
  std::vector<std::unique_ptr<Computation>> computations_;
  Computation* entry_ = nullptr;
  std::vector<OutputAlias> output_aliases_;
  std::unordered_set<std::string> used_names_;
  std::unordered_map<std::string, int64_t> next_suffix_;  // per stem, for UniqueName
};

}  // namespace podsim::ir
