import LookoutHTTP
import LookoutModel
import LookoutUpstream
/// Something the request-task map can key by id.
protocol TaskMapIdentifiable: AnyObject {
    var id: UInt64 { get }
}

/// Two-way map between client exchanges and their current upstream task, like Alamofire's.
///
/// An entry goes away only once the task has both completed and delivered its metrics, so no
/// upstream callback can arrive for an exchange the map has forgotten. Inconsistent use traps:
/// limping on with a wrong map would send one client's bytes to another.
final class RequestTaskMap<Request: TaskMapIdentifiable, Task: TaskMapIdentifiable> {  // confined to one event loop's queue
    private var tasksByRequest = IDTable<UInt64, Task>()
    private var requestsByTask = IDTable<UInt64, Request>()
    private var progress = IDTable<UInt64, (completed: Bool, metricsGathered: Bool)>()

    var count: Int { requestsByTask.count }
    var isEmpty: Bool { requestsByTask.isEmpty }

    func add(_ task: Task, for request: Request) {
        precondition(requestsByTask[task.id] == nil, "task \(task.id) is already mapped")
        precondition(tasksByRequest[request.id] == nil, "request \(request.id) already has a task")
        tasksByRequest[request.id] = task
        requestsByTask[task.id] = request
        progress[task.id] = (false, false)
    }

    func request(forTask taskID: UInt64) -> Request? { requestsByTask[taskID] }
    func task(forRequest requestID: UInt64) -> Task? { tasksByRequest[requestID] }

    /// Records the task's completion; returns true when the entry was removed.
    @discardableResult
    func disassociateIfNecessaryAfterCompleting(_ task: Task) -> Bool {
        guard var state = progress[task.id] else {
            preconditionFailure("completed task \(task.id) is not in the map")
        }
        precondition(!state.completed, "task \(task.id) completed twice")
        state.completed = true
        return store(state, for: task)
    }

    /// Records the task's metrics; returns true when the entry was removed.
    @discardableResult
    func disassociateIfNecessaryAfterGatheringMetrics(_ task: Task) -> Bool {
        guard var state = progress[task.id] else {
            preconditionFailure("metrics for task \(task.id), which is not in the map")
        }
        precondition(!state.metricsGathered, "task \(task.id) gathered metrics twice")
        state.metricsGathered = true
        return store(state, for: task)
    }

    private func store(_ state: (completed: Bool, metricsGathered: Bool), for task: Task) -> Bool {
        guard state.completed && state.metricsGathered else {
            progress[task.id] = state
            return false
        }
        progress[task.id] = nil
        guard let request = requestsByTask.removeValue(forKey: task.id) else {
            preconditionFailure("task \(task.id) has no request")
        }
        precondition(tasksByRequest[request.id] === task, "request \(request.id) maps to another task")
        tasksByRequest[request.id] = nil
        return true
    }
}

/// A task is found in the map by its id.
extension UpstreamTask: TaskMapIdentifiable {}
