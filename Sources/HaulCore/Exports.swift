/// The model (a download's state, facts, progress, errors, events and record) is part of the engine's face: a
/// module that imports HaulCore sees it as its own.
@_exported import HaulModel
